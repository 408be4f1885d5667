// For tests and development (AppOptions.validateResponses): every answer a route sends is
// checked against its response schema before fastify serializes it, by
// @fastify/response-validation; a mismatch answers 500 naming the field. The check treats
// every object of an answer as closed: fastify's serializer silently drops a field its schema
// does not name, so a field the route sends and the contract lacks is a disagreement too.
// Off in production: it costs a validation per answer.
import type { FastifyInstance } from 'fastify';
import { Ajv, type AnySchema, type AsyncSchema, type AsyncValidateFunction, type ValidateFunction } from 'ajv';
import { AJV_CODE_OPTIONS } from '../config/defaults.js';

/** Keys of a route's answer that only the OpenAPI document reads (see schemas.ts). */
const DOCUMENT_ONLY = new Set(['x-response-description', 'x-examples', 'headers']);

/** A copy of a response schema with every object closed, and what only the document reads left out. */
export function closedAnswer(schema: unknown, top = true): unknown {
  if (Array.isArray(schema)) return schema.map((item) => closedAnswer(item, false));
  if (schema === null || typeof schema !== 'object') return schema;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (top && DOCUMENT_ONLY.has(key)) continue;
    // Examples are data, not schemas: kept as they are.
    copy[key] = key === 'examples' || key === 'enum' ? value : closedAnswer(value, false);
  }
  if ('properties' in copy && !('additionalProperties' in copy) && !('patternProperties' in copy))
    copy.additionalProperties = false;
  return copy;
}

/** Ajv that compiles each response schema as closedAnswer makes it. */
class ClosedAnswers extends Ajv {
  override compile<T = unknown>(schema: AsyncSchema, meta?: boolean): AsyncValidateFunction<T>;
  override compile<T = unknown>(schema: AnySchema, meta?: boolean): ValidateFunction<T>;
  override compile<T = unknown>(schema: AnySchema, meta?: boolean): ValidateFunction<T> | AsyncValidateFunction<T> {
    return super.compile<T>(closedAnswer(schema) as AnySchema, meta);
  }
}

/** Registers the check on `app`: call it before any route is added. */
export function registerResponseCheck(app: FastifyInstance): void {
  const ajv = new ClosedAnswers({ allErrors: true, coerceTypes: false, useDefaults: false, code: AJV_CODE_OPTIONS });
  // A devDependency, loaded only when asked for.
  void app.register(import('@fastify/response-validation'), { ajv });
}
