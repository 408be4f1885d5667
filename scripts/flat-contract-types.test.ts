// The contract's declarations as the packages ship them are its types spelled out: each one
// the same type as the schema's Static (each assignable to the other, checked by tsc), with
// no import left, and the schemas' descriptions as the properties' JSDoc.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { flatContractTypes, MODULES } from './flat-contract-types.mjs';

const ROOT = new URL('../', import.meta.url).pathname;
const folder = mkdtempSync(join(tmpdir(), 'memgate-flat-'));
afterAll(() => {
  rmSync(folder, { recursive: true, force: true });
});

const declarations = await flatContractTypes(
  (name) => import(`../src/shared/${name}.ts`) as Promise<Record<string, unknown>>,
);

describe('the contract declarations the packages ship', () => {
  it('import nothing, and carry the schemas’ descriptions', () => {
    expect(declarations.map(({ name }) => name)).toEqual(MODULES);
    for (const { text } of declarations) expect(text).not.toMatch(/from 'typebox'|import\(/);
    const contract = declarations.find(({ name }) => name === 'contract')?.text ?? '';
    expect(contract).toContain(
      '/** seconds until this request would be allowed, if nothing else arrives; only on a deny */\n  readonly retryAfter?: number;',
    );
  });

  it('are the same types as the schemas’ own', () => {
    for (const { name, text } of declarations) writeFileSync(join(folder, `${name}.d.ts`), text);
    const source = (name: string) => join(ROOT, 'src/shared', `${name}.ts`);
    const pairs: string[] = [];
    for (const { name, text } of declarations) {
      for (const [, type] of text.matchAll(/^export type (\w+) = /gm)) {
        pairs.push(`Same<F_${name.replace('-', '_')}.${type}, S_${name.replace('-', '_')}.${type}>`);
      }
    }
    const check = join(folder, 'check.ts');
    writeFileSync(
      check,
      [
        ...MODULES.map((name) => `import type * as F_${name.replace('-', '_')} from './${name}.js';`),
        ...MODULES.map(
          (name) => `import type * as S_${name.replace('-', '_')} from '${source(name).replace(/\.ts$/, '.js')}';`,
        ),
        'type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;',
        `export const same: [${pairs.join(', ')}] = [${pairs.map(() => 'true').join(', ')}];`,
      ].join('\n'),
    );
    const program = ts.createProgram([check], {
      strict: true,
      exactOptionalPropertyTypes: true,
      noEmit: true,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      skipLibCheck: true,
    });
    const problems = ts
      .getPreEmitDiagnostics(program)
      .filter((diagnostic) => diagnostic.file?.fileName === check || diagnostic.file?.fileName.startsWith(folder))
      .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n').slice(0, 400));
    expect(pairs.length).toBeGreaterThan(30);
    expect(problems).toEqual([]);
  });
});
