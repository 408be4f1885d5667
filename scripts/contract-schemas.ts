// Writes src/shared/contract-schemas.ts: every schema of the HTTP contract (src/shared/contract.ts,
// contract-service.ts) as a JSON copy of what TypeBox builds, typed as the TypeBox schema it
// is. The service gives fastify these, so that no start of it loads TypeBox (its 370-odd ES
// modules, then building the schemas: about 90 ms to listening and 120 ms of CPU a start,
// docs/performance.md, Start-up), while the contract stays written once, in TypeBox, and the
// routes' types come from it.
// src/shared/contract-schemas.test.ts fails when the committed file is not what this writes.
// Usage: npx tsx scripts/contract-schemas.ts
import { writeFileSync } from 'node:fs';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import * as contract from '../src/shared/contract.js';
import * as service from '../src/shared/contract-service.js';

export const GENERATE_COMMAND = 'npx tsx scripts/contract-schemas.ts';

export const SCHEMAS_FILE = fileURLToPath(new URL('../src/shared/contract-schemas.ts', import.meta.url));

/** Each contract module, by the name the generated file imports its types under: its file, and its schemas. */
export const CONTRACT_MODULES = {
  contract: { file: './contract.js', schemas: contract },
  service: { file: './contract-service.js', schemas: service },
} as const;

/**
 * A schema as JSON keeps it: what ajv, fast-json-stringify and @fastify/swagger read. TypeBox's
 * own markers (`~kind`, `~optional`, ...) are non-enumerable keys, which they do not read. Only
 * plain objects, arrays, strings, finite numbers, booleans and null: anything JSON would change
 * or drop (a function, undefined, a RegExp, a Date, Infinity) is refused.
 */
export function plainSchema(name: string, schema: unknown): unknown {
  const refuse = (key: string, what: string) => {
    throw new Error(`contract schema ${name}: ${key || 'its root'} is ${what}, which JSON cannot hold as it is`);
  };
  const text = JSON.stringify(schema, function (this: unknown, key, value: unknown) {
    // The value before any toJSON (a Date's becomes a string).
    const held = (this as Record<string, unknown>)[key] ?? value;
    if (typeof held === 'function' || held === undefined) refuse(key, typeof held);
    if (typeof held === 'number' && !Number.isFinite(held)) refuse(key, String(held));
    if (typeof held === 'object' && held !== null && !Array.isArray(held)) {
      const prototype = Object.getPrototypeOf(held) as unknown;
      if (prototype !== Object.prototype && prototype !== null) refuse(key, `a ${held.constructor.name}`);
    }
    return value;
  });
  return JSON.parse(text) as unknown;
}

/** The text of src/shared/contract-schemas.ts for the contract as it is now. */
export function contractSchemasSource(): string {
  const lines = [
    '// Generated from the HTTP contract (contract.ts, contract-service.ts) by',
    `// scripts/contract-schemas.ts: do not edit; run \`${GENERATE_COMMAND}\` after changing it.`,
    '// A JSON copy of every schema TypeBox builds, typed as the TypeBox schema it is: the',
    '// service reads these, and so loads no TypeBox at run time (docs/performance.md, Start-up).',
    '// A schema another one holds is named there, not written again.',
    ...Object.entries(CONTRACT_MODULES).map(([name, { file }]) => `import type * as ${name} from '${file}';`),
  ];
  const schemas = Object.entries(CONTRACT_MODULES).flatMap(([moduleName, module]) =>
    Object.entries(module.schemas).map(([name, schema]) => {
      const plain = plainSchema(name, schema);
      return { moduleName, name, plain, json: JSON.stringify(plain) };
    }),
  );
  // Smaller first: a schema another holds is shorter than it, so it is declared before it is named.
  schemas.sort((a, b) => a.json.length - b.json.length || (a.name < b.name ? -1 : 1));
  const declared = new Map<string, string>();
  for (const { moduleName, name, plain, json } of schemas) {
    lines.push(
      '',
      `export const ${name} = ${source(plain, '', declared, true)} as unknown as typeof ${moduleName}.${name};`,
    );
    if (!declared.has(json)) declared.set(json, name);
  }
  return `${lines.join('\n')}\n`;
}

/** `value` as TypeScript source, JSON laid out two spaces a level, a schema already declared by its name. */
function source(value: unknown, indent: string, declared: ReadonlyMap<string, string>, root = false): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const named = root ? undefined : declared.get(JSON.stringify(value));
  if (named !== undefined) return named;
  const inner = `${indent}  `;
  const entries = Array.isArray(value)
    ? value.map((item) => source(item, inner, declared))
    : Object.entries(value).map(([key, item]) => `${JSON.stringify(key)}: ${source(item, inner, declared)}`);
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  if (entries.length === 0) return `${open}${close}`;
  return `${open}\n${entries.map((entry) => `${inner}${entry}`).join(',\n')}\n${indent}${close}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(SCHEMAS_FILE, contractSchemasSource());
  console.log(`wrote ${SCHEMAS_FILE}`);
}
