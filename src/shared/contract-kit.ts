// The few shapes memgate's contract (contract.ts, contract-service.ts) is written in, as
// TypeBox builds them: answers read-only, requests closed, OpenAPI 3.0's `enum` for words.
import { Type, type TSchema } from 'typebox';

type Properties = Parameters<typeof Type.Object>[0];

/** An object whose every property is read-only, in a request or an answer. */
export const object = <P extends Properties>(properties: P, options: Record<string, unknown> = {}) =>
  // ReadonlyObject keeps only the options given to it, not those of the object it wraps.
  Type.ReadonlyObject(Type.Object(properties), options);
/** A request body or query: no field but the ones named. */
export const request = <P extends Properties>(properties: P, options: Record<string, unknown> = {}) =>
  object(properties, { additionalProperties: false, ...options });
/** An array whose items are read-only. */
export const list = <T extends TSchema>(items: T, options: Record<string, unknown> = {}) =>
  Type.Immutable(Type.Array(items, options));
/** A value of a few words: OpenAPI 3.0 reads `enum`, not `const`. */
export const oneOf = <const W extends readonly string[]>(words: W, options: Record<string, unknown> = {}) =>
  Type.Unsafe<W[number]>({ type: 'string', enum: [...words], ...options });
/** `true` when present. */
export const flag = (description: string) => Type.Unsafe<true>({ type: 'boolean', enum: [true], description });

/**
 * A request as a TypeScript caller builds it: an optional field may be given as `undefined`
 * (as JSON drops it), e.g. `{ event, feature, tier: maybeTier }`.
 */
export type Asked<T> = { readonly [K in keyof T]: Pick<T, K> extends Required<Pick<T, K>> ? T[K] : T[K] | undefined };
