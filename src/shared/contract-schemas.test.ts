import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  CONTRACT_MODULES,
  contractSchemasSource,
  GENERATE_COMMAND,
  plainSchema,
  SCHEMAS_FILE,
} from '../../scripts/contract-schemas.js';
import * as generated from './contract-schemas.js';

describe('contract-schemas.ts', () => {
  const committed = readFileSync(SCHEMAS_FILE, 'utf8');

  it('is what scripts/contract-schemas.ts writes for the contract as it is', () => {
    const written = contractSchemasSource();
    const committedLines = committed.split('\n');
    const firstDifference = written.split('\n').findIndex((line, i) => line !== committedLines[i]);
    expect(
      committed === written,
      `src/shared/contract-schemas.ts is stale (it differs from line ${firstDifference + 1}): run \`${GENERATE_COMMAND}\``,
    ).toBe(true);
  });

  it('holds every schema of the contract, each as JSON keeps the TypeBox one', () => {
    const expected = Object.values(CONTRACT_MODULES).flatMap((module) => Object.entries(module));
    expect(Object.keys(generated).sort()).toEqual(expected.map(([name]) => name).sort());
    for (const [name, schema] of expected) {
      expect(generated[name as keyof typeof generated], name).toEqual(JSON.parse(JSON.stringify(schema)));
    }
  });

  it('imports types only: the service that reads it loads no TypeBox', () => {
    const imports = committed.split('\n').filter((line) => /^\s*(import|export)\b.*\bfrom\b/.test(line));
    expect(imports.length).toBeGreaterThan(0);
    for (const line of imports) expect(line).toMatch(/^import type \* as \w+ from '\.\/contract(-service)?\.js';$/);
    expect(committed).not.toMatch(/\bimport\s*\(|\brequire\s*\(/);
  });

  it('refuses a schema JSON cannot hold whole', () => {
    expect(() => plainSchema('Odd', { type: 'object', default: () => 1 })).toThrow(/Odd: default is function/);
    expect(() => plainSchema('Odd', { type: 'string', examples: undefined })).toThrow(/Odd: examples is undefined/);
    expect(plainSchema('Fine', { type: 'string', [Symbol('kind')]: 'String' })).toEqual({ type: 'string' });
  });
});
