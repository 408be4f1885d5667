// Writes src/shared/contract-schemas.ts: every schema of the HTTP contract (src/shared/contract.ts,
// contract-service.ts) as the plain JSON object TypeBox builds, typed as the TypeBox schema it
// is. The service gives fastify these, so that no start of it loads TypeBox (about 150 ms of
// every start: its 370-odd ES modules, then building the schemas), while the contract stays
// written once, in TypeBox, and the routes' types come from it.
// src/shared/contract-schemas.test.ts fails when the committed file is not what this writes.
// Usage: npx tsx scripts/contract-schemas.ts
import { writeFileSync } from 'node:fs';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import * as contract from '../src/shared/contract.js';
import * as service from '../src/shared/contract-service.js';

export const GENERATE_COMMAND = 'npx tsx scripts/contract-schemas.ts';

export const SCHEMAS_FILE = fileURLToPath(new URL('../src/shared/contract-schemas.ts', import.meta.url));

/** Each contract module, by the name the generated file imports its types under. */
export const CONTRACT_MODULES = { contract, service } as const;

const MODULE_FILES: Readonly<Record<keyof typeof CONTRACT_MODULES, string>> = {
  contract: './contract.js',
  service: './contract-service.js',
};

/**
 * A schema as JSON keeps it: what ajv, fast-json-stringify and @fastify/swagger read. TypeBox's
 * own markers are symbols, which they do not read; a function or an undefined in a schema would
 * be lost, and is refused.
 */
export function plainSchema(name: string, schema: unknown): unknown {
  const text = JSON.stringify(schema, (key, value: unknown) => {
    if (typeof value === 'function' || value === undefined)
      throw new Error(`contract schema ${name}: ${key || 'its root'} is ${typeof value}, which JSON cannot hold`);
    return value;
  });
  return JSON.parse(text) as unknown;
}

/** The text of src/shared/contract-schemas.ts for the contract as it is now. */
export function contractSchemasSource(): string {
  const lines = [
    '// Generated from the HTTP contract (contract.ts, contract-service.ts) by',
    `// scripts/contract-schemas.ts: do not edit; run \`${GENERATE_COMMAND}\` after changing it.`,
    '// Every schema as the plain object TypeBox builds, typed as the TypeBox schema it is: the',
    '// service reads these, and so loads no TypeBox at run time (about 150 ms of every start).',
    ...Object.entries(MODULE_FILES).map(([name, file]) => `import type * as ${name} from '${file}';`),
  ];
  for (const [moduleName, module] of Object.entries(CONTRACT_MODULES)) {
    for (const [name, schema] of Object.entries(module).sort(([a], [b]) => (a < b ? -1 : 1))) {
      const json = JSON.stringify(plainSchema(name, schema), null, 2);
      lines.push('', `export const ${name} = ${json} as unknown as typeof ${moduleName}.${name};`);
    }
  }
  return `${lines.join('\n')}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(SCHEMAS_FILE, contractSchemasSource());
  console.log(`wrote ${SCHEMAS_FILE}`);
}
