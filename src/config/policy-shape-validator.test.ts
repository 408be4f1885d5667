import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  GENERATE_COMMAND,
  POLICY_AJV_OPTIONS,
  policyValidatorSource,
  VALIDATOR_FILE,
} from '../../scripts/policy-validator.js';
import { staleness } from '../../scripts/lib/generated-file.js';
import { MAX_LIMIT, policyFileSchema } from './policy-schema.js';
import { validatePolicyShape } from './policy-shape-validator.js';

// The validator policies.ts ran before it was compiled ahead of time, and that the service
// still runs for its other schemas: the generated one must accept, refuse and word as it does.
const live = new Ajv(POLICY_AJV_OPTIONS).compile(policyFileSchema);

describe('policy-shape-validator.ts', () => {
  const committed = readFileSync(VALIDATOR_FILE, 'utf8');

  it('is what scripts/policy-validator.ts writes for the schema as it is', () => {
    expect(
      staleness('src/config/policy-shape-validator.ts', committed, policyValidatorSource(), GENERATE_COMMAND),
    ).toBeUndefined();
  });

  it('loads nothing at run time: no ajv, no require, only type imports', () => {
    expect(committed).not.toMatch(/['"]ajv(?:\/[^'"]*)?['"]/);
    expect(committed).not.toMatch(/\brequire\s*\(/);
    expect(committed).not.toMatch(/\bimport\s*\(/);
    const imports = committed.split('\n').filter((line) => /^\s*(import|export)\b.*\bfrom\b/.test(line));
    expect(imports).toEqual(["import type { SchemaError } from './document-order.js';"]);
  });
});

/** Runs both validators on one document and expects the same verdict and the same errors. */
function expectAgreement(document: unknown): boolean {
  const valid = validatePolicyShape(document);
  const errors = validatePolicyShape.errors;
  expect(valid).toBe(live(document));
  expect(errors).toStrictEqual(live.errors);
  return valid;
}

describe('validatePolicyShape agrees with ajv compiling the schema at run time', () => {
  it('counts a string in code points for maxLength, as ajv does (its ucs2length, inlined)', () => {
    const limitsWith = (timezone: string) => ({ events: { a: { limits: [{ limit: 1, window: '1m', timezone }] } } });
    expect(expectAgreement(limitsWith('😀'.repeat(64)))).toBe(true);
    expect(expectAgreement(limitsWith('😀'.repeat(65)))).toBe(false);
    expect(validatePolicyShape.errors?.map((e) => [e.instancePath, e.keyword, e.message])).toEqual([
      ['/events/a/limits/0/timezone', 'maxLength', 'must NOT have more than 64 characters'],
    ]);
    // Lone surrogates count one each; a high one before a low one pairs into one character.
    expect(expectAgreement(limitsWith('\uD800'.repeat(64)))).toBe(true);
    expect(expectAgreement(limitsWith('\uDC00'.repeat(65)))).toBe(false);
    expect(expectAgreement(limitsWith('\uD800\uDC00'.repeat(64)))).toBe(true);
    const route = (prefix: string) => ({ gateway: { routes: [{ prefix, event: 'a' }] }, events: { a: { limits: [] } } });
    expectAgreement(route(`/${'😀'.repeat(1023)}`));
    expectAgreement(route(`/${'😀'.repeat(1024)}`));
  });

  it('on random mutations of valid policy documents', () => {
    fc.assert(
      fc.property(
        validDocument,
        fc.array(mutation, { maxLength: 4 }),
        fc.option(growth),
        (document, mutations, grow) => {
          let mutated: unknown = structuredClone(document);
          for (const mutate of mutations) mutated = mutate(mutated);
          if (grow) mutated = grow(mutated);
          expectAgreement(mutated);
        },
      ),
      { numRuns: 1000 },
    );
  });
});

// --- Valid documents -------------------------------------------------------------------------

const NAME_CHARS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-'.split('');
const name = fc.string({ unit: fc.constantFrom(...NAME_CHARS), minLength: 1, maxLength: 64 });
const duration = fc.oneof(fc.constantFrom('1s', '30s', '1m', '1h', '1d', '1w', '1mo'), fc.integer({ min: 1, max: 86_400 }));
const count = fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.constantFrom(1, MAX_LIMIT));
const mode = fc.constantFrom('enforce', 'shadow');

const limit = fc.record(
  {
    name,
    limit: count,
    window: duration,
    granularity: duration,
    anchor: fc.oneof(fc.integer({ min: 1, max: 28 }), fc.constantFrom('monday', 'sunday')),
    timezone: fc.constantFrom('UTC', 'Europe/Paris', 'America/Argentina/Buenos_Aires'),
    rate: fc.constantFrom('10/s', '600/1m'),
    burst: count,
    timeout: duration,
    mode,
  },
  { requiredKeys: ['limit'] },
);
const limits = fc.array(limit, { minLength: 1, maxLength: 3 });
const clientMatch = fc.oneof(
  fc.record({ feature: fc.string() }),
  fc.record({ prefix: fc.string() }),
  fc.record({ cidr: fc.constantFrom('10.0.0.0/8', '::1/128') }),
);
const clientList = fc.array(clientMatch, { maxLength: 3 });

const event = fc.record(
  {
    algorithm: fc.constantFrom('sliding', 'fixed', 'token-bucket', 'concurrency'),
    edge: fc.constantFrom('whole', 'drop', 'weighted'),
    onStoreError: fc.constantFrom('allow', 'deny'),
    mode,
    lease: fc.record({ maxUnits: count, life: duration }, { requiredKeys: [] }),
    reservations: fc.record({ life: duration }, { requiredKeys: [] }),
    limits,
    tiers: fc.dictionary(name, fc.record({ limits }), { maxKeys: 3 }),
    overrides: fc.array(
      fc.record(
        { match: clientMatch, limits, tier: name, until: fc.constant('2030-01-01T00:00:00Z') },
        { requiredKeys: ['match'] },
      ),
      { maxLength: 3 },
    ),
    allow: clientList,
    deny: clientList,
  },
  { requiredKeys: ['limits'] },
);

const gateway = fc.record(
  {
    feature: fc.constantFrom('client-ip', 'header:x-user'),
    ipv6Subnet: fc.oneof(fc.integer({ min: 1, max: 128 }), fc.constant(false)),
    trustedProxies: fc.oneof(
      fc.integer({ min: 0, max: 16 }),
      fc.array(fc.constantFrom('loopback', '10.0.0.0/8'), { maxLength: 3 }),
    ),
    uri: fc.constantFrom('path', 'header:x-uri'),
    event: fc.constantFrom('routes', 'header:x-event'),
    pathCase: fc.constantFrom('insensitive', 'sensitive'),
    unmatched: fc.constantFrom('allow', 'deny'),
    denyStatus: fc.constantFrom(429, 403),
    invalidStatus: fc.constantFrom(400, 401),
    tier: fc.constant('header:x-tier'),
    allow: clientList,
    deny: clientList,
    routes: fc.array(fc.record({ prefix: fc.constantFrom('/', '/api', '/login/'), event: name }), { maxLength: 3 }),
  },
  { requiredKeys: [] },
);

const validDocument = fc.record(
  { gateway, events: fc.dictionary(name, event, { minKeys: 1, maxKeys: 3 }) },
  { requiredKeys: ['events'] },
);

// --- Mutations -------------------------------------------------------------------------------

const emoji = (n: number) => '😀'.repeat(n);

/** Values that break a field's type, range or length, or only just do not. */
const strayValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(
    0,
    -1,
    -0,
    1.5,
    16,
    17,
    64,
    65,
    128,
    129,
    1000,
    1001,
    MAX_LIMIT,
    MAX_LIMIT + 1,
    2 ** 53,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    null,
    true,
    false,
    '',
    '1m',
    'enforce',
    'fixed',
    429,
    400,
    '/',
    '/a b',
    '/?',
    'a'.repeat(64),
    'a'.repeat(65),
    emoji(64),
    emoji(65),
    `/${emoji(1023)}`,
    `/${emoji(1024)}`,
    '\uD800'.repeat(65),
    [],
    {},
    [{}],
  ),
  fc.string({ unit: 'binary', maxLength: 70 }),
  fc.integer(),
  fc.double(),
  fc.anything({ maxDepth: 2 }),
);

/** Keys that belong elsewhere in a policy file, or nowhere, or are names only just (in)valid. */
const strayKey = fc.oneof(
  fc.constantFrom(
    'limits',
    'events',
    'gateway',
    'limit',
    'window',
    'rate',
    'match',
    'prefix',
    'routes',
    'tier',
    'constructor',
    'hasOwnProperty',
    '__proto__',
    '',
    'a b',
    'a'.repeat(64),
    'a'.repeat(65),
    emoji(1),
  ),
  fc.string({ unit: 'binary', maxLength: 8 }),
);

type Mutation = (document: unknown) => unknown;

/** Every place in the document: its path, the root's being []. */
function placesOf(value: unknown, path: readonly string[] = []): string[][] {
  const places = [[...path]];
  if (value !== null && typeof value === 'object') {
    for (const key of Object.keys(value)) {
      for (const place of placesOf((value as Record<string, unknown>)[key], [...path, key])) places.push(place);
    }
  }
  return places;
}

function at(document: unknown, path: readonly string[]): unknown {
  let value = document;
  for (const key of path) value = (value as Record<string, unknown>)[key];
  return value;
}

/** Sets an own property, even `__proto__`, as parsing JSON or YAML would. */
function setOwn(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A mutation applied at one place, chosen among the document's places by `pick`. */
function atPlace(pick: number, change: (document: unknown, path: string[]) => unknown): Mutation {
  return (document) => {
    const places = placesOf(document);
    const path = places[pick % places.length] as string[];
    return change(document, path);
  };
}

function replace(document: unknown, path: readonly string[], value: unknown): unknown {
  if (path.length === 0) return value;
  setOwn(at(document, path.slice(0, -1)) as object, path.at(-1) as string, value);
  return document;
}

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  // A value of the wrong type or out of range.
  fc.tuple(fc.nat(), strayValue).map(([pick, value]) => atPlace(pick, (document, path) => replace(document, path, value))),
  // A key too many.
  fc.tuple(fc.nat(), strayKey, strayValue).map(([pick, key, value]) =>
    atPlace(pick, (document, path) => {
      const target = at(document, path);
      if (target !== null && typeof target === 'object' && !Array.isArray(target)) setOwn(target, key, value);
      return document;
    }),
  ),
  // A key or item missing.
  fc.nat().map((pick) =>
    atPlace(pick, (document, path) => {
      if (path.length === 0) return document;
      const parent = at(document, path.slice(0, -1));
      if (Array.isArray(parent)) parent.splice(Number(path.at(-1)), 1);
      else Reflect.deleteProperty(parent as object, path.at(-1) as string);
      return document;
    }),
  ),
  // A string made of emoji, about as long as a maxLength allows: each is one character, two UTF-16 units.
  fc.tuple(fc.nat(), fc.constantFrom(1, 32, 33, 63, 64, 65, 1023, 1024, 1025)).map(([pick, length]): Mutation => (document) => {
    const strings = placesOf(document).filter((path) => typeof at(document, path) === 'string');
    const path = strings[pick % Math.max(strings.length, 1)];
    return path ? replace(document, path, `${path.at(-1) === 'prefix' ? '/' : ''}${emoji(length)}`) : document;
  }),
  // A key renamed (event and tier names), its value kept.
  fc.tuple(fc.nat(), strayKey).map(([pick, key]) =>
    atPlace(pick, (document, path) => {
      const parent = path.length > 0 ? at(document, path.slice(0, -1)) : undefined;
      if (parent === null || typeof parent !== 'object' || Array.isArray(parent)) return document;
      const value = (parent as Record<string, unknown>)[path.at(-1) as string];
      Reflect.deleteProperty(parent, path.at(-1) as string);
      setOwn(parent, key, value);
      return document;
    }),
  ),

);

/**
 * An array or object grown to (just past) its most items or keys. Applied last and once: its
 * copies are one value shared, so that a document of a thousand routes stays cheap to build.
 */
const growth: fc.Arbitrary<Mutation> = fc
  .tuple(fc.nat(), fc.constantFrom(0, 16, 17, 32, 33, 64, 65, 1000, 1001))
  .map(([pick, size]) =>
    atPlace(pick, (document, path) => {
      const target = at(document, path);
      if (Array.isArray(target)) {
        const item: unknown = target[0] ?? {};
        target.length = 0;
        for (let i = 0; i < size; i++) target.push(item);
      } else if (target !== null && typeof target === 'object') {
        const value: unknown = Object.values(target)[0] ?? {};
        for (let i = 0; i < size; i++) setOwn(target, `k${i}`, value);
      }
      return document;
    }),
  );
