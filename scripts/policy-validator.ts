// Writes src/config/policy-shape-validator.ts: the policy file schema (src/config/policy-schema.ts)
// compiled ahead of time by ajv's standalone code. The library (policies.ts and what it imports)
// then validates policy files without ajv at run time: it is to ship as a package of its own,
// and ajv would be 3 MB and 5 of its packages. The service keeps ajv for its other schemas.
// src/config/policy-shape-validator.test.ts fails when the committed file is not what this writes.
// Usage: npx tsx scripts/policy-validator.ts
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import standalone from 'ajv/dist/standalone/index.js';
import { AJV_CODE_OPTIONS } from '../src/config/defaults.js';
import { policyFileSchema } from '../src/config/policy-schema.js';

export const GENERATE_COMMAND = 'npx tsx scripts/policy-validator.ts';

export const VALIDATOR_FILE = fileURLToPath(new URL('../src/config/policy-shape-validator.ts', import.meta.url));

/**
 * The options policies.ts compiled the schema with when it ran ajv itself: the generated
 * code accepts, refuses and words its errors as that did (the test compares the two).
 */
export const POLICY_AJV_OPTIONS = { allErrors: true, allowUnionTypes: true, code: AJV_CODE_OPTIONS } as const;

/**
 * Runtime helpers the generated code may ask ajv for, each inlined as ajv's own function: only
 * self-contained ones (their source names nothing outside them). ucs2length counts a string's
 * code points for minLength and maxLength, so that an emoji is one character, not two; ajv's
 * `unicode: false` would spare it but count UTF-16 units, accepting less than before.
 */
const INLINED_HELPERS: Readonly<Record<string, string>> = { 'ajv/dist/runtime/ucs2length': 'default' };

const ESM_HEADER = '"use strict";\nexport const validate = validate10;\nexport default validate10;\n';

/** The text of src/config/policy-shape-validator.ts for the schema as it is now. */
export function policyValidatorSource(): string {
  // lines: a line a statement, so that a schema change shows as a readable diff.
  const ajv = new Ajv({ ...POLICY_AJV_OPTIONS, code: { ...AJV_CODE_OPTIONS, source: true, esm: true, lines: true } });
  const code = standalone.default(ajv, ajv.compile(policyFileSchema));
  if (!code.startsWith(ESM_HEADER))
    throw new Error('ajv standalone code no longer starts as expected: update scripts/policy-validator.ts');
  const require = createRequire(import.meta.url);
  const body = code
    .slice(ESM_HEADER.length)
    .replace(/require\("([^"]+)"\)\.(\w+)/g, (call, specifier: string, member: string) => {
      if (INLINED_HELPERS[specifier] !== member) {
        throw new Error(
          `the policy schema now needs ${call} at run time: inline it in scripts/policy-validator.ts if it is self-contained, or choose ajv options that avoid it`,
        );
      }
      const helper = (require(specifier) as Record<string, unknown>)[member];
      if (typeof helper !== 'function') throw new Error(`${call} is not a function`);
      return `/* ${specifier}, inlined: this file imports nothing at run time */ ${helper.toString()}`;
    });
  if (/\brequire\s*\(|\bimport\s*\(/.test(body))
    throw new Error('the generated validator still loads a module at run time');
  return [
    '// @ts-nocheck',
    "// Generated from policyFileSchema (src/config/policy-schema.ts) by ajv's standalone code: do not",
    `// edit; run \`${GENERATE_COMMAND}\` after changing the schema. It imports nothing at run`,
    '// time, so that the library (policies.ts) does not carry ajv (3 MB, 5 packages).',
    "import type { SchemaError } from './document-order.js';",
    '',
    '/** True when `document` has the shape of a policy file; if not, `errors` lists every fault (as ajv words them). */',
    'export interface PolicyShapeValidator {',
    '  (document: unknown): boolean;',
    '  errors?: SchemaError[] | null;',
    '}',
    '',
    'export const validatePolicyShape: PolicyShapeValidator = validate10;',
    '',
    body.endsWith('\n') ? body : `${body}\n`,
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(VALIDATOR_FILE, policyValidatorSource());
  console.log(`wrote ${VALIDATOR_FILE}`);
}
