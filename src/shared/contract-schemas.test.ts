import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  CONTRACT_MODULES,
  contractSchemasSource,
  GENERATE_COMMAND,
  plainSchema,
  SCHEMAS_FILE,
} from '../../scripts/contract-schemas.js';
import { staleness } from '../../scripts/lib/generated-file.js';
import * as generated from './contract-schemas.js';

describe('contract-schemas.ts', () => {
  const committed = readFileSync(SCHEMAS_FILE, 'utf8');

  it('is what scripts/contract-schemas.ts writes for the contract as it is', () => {
    expect(
      staleness('src/shared/contract-schemas.ts', committed, contractSchemasSource(), GENERATE_COMMAND),
    ).toBeUndefined();
  });

  it('holds every schema of the contract, each as JSON keeps the TypeBox one', () => {
    const expected = Object.values(CONTRACT_MODULES).flatMap(({ schemas }) => Object.entries(schemas));
    expect(Object.keys(generated).sort()).toEqual(expected.map(([name]) => name).sort());
    for (const [name, schema] of expected) {
      // Against the TypeBox object itself: its markers are non-enumerable, which toEqual skips.
      expect(generated[name as keyof typeof generated], name).toEqual(schema);
    }
  });

  it('imports types only: the service that reads it loads no TypeBox', () => {
    const imports = committed.split('\n').filter((line) => /^\s*import\b/.test(line));
    expect(imports).toEqual([
      "import type * as contract from './contract.js';",
      "import type * as service from './contract-service.js';",
    ]);
    // No re-export either: every export is a schema written out.
    expect(committed).not.toMatch(/^\s*export\s+(?:type\s+)?(?:\*|\{[^}]*\})\s*from\s/m);
    expect(committed).not.toMatch(/\bimport\s*\(|\brequire\s*\(/);
  });

  it('refuses a schema JSON cannot hold whole', () => {
    expect(() => plainSchema('Odd', { type: 'object', default: () => 1 })).toThrow(/Odd: default is function/);
    expect(() => plainSchema('Odd', { type: 'string', examples: undefined })).toThrow(/Odd: examples is undefined/);
    expect(() => plainSchema('Odd', { type: 'string', pattern: /a+/ })).toThrow(/Odd: pattern is a RegExp/);
    expect(() => plainSchema('Odd', { type: 'string', default: new Date(0) })).toThrow(/Odd: default is a Date/);
    expect(() => plainSchema('Odd', { type: 'number', maximum: Infinity })).toThrow(/Odd: maximum is Infinity/);
    // TypeBox's markers are non-enumerable keys: left out, as ajv and fastify never read them.
    const marked = Object.defineProperty({ type: 'string' }, '~kind', { value: 'String', enumerable: false });
    expect(plainSchema('Fine', marked)).toEqual({ type: 'string' });
  });
});
