// memgate/client and the framework entries ship as a package of their own, memgate-client
// (packages/client, built from these folders), without the service: src/client,
// src/integrations and src/shared import nothing else of memgate, and no package that
// memgate-client does not declare. What they share with the service lives in src/shared.
// The HTTP contract's schemas (src/shared/contract*.ts) are TypeBox's, which memgate-client
// does not depend on: the client side takes their types only, which its build writes out
// (scripts/flat-contract-types.mjs), and the package leaves their code out.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const SRC = new URL('../', import.meta.url);
const CLIENT_SIDE = ['client', 'integrations', 'shared'];
const CLIENT_PACKAGE = JSON.parse(
  readFileSync(new URL('../../packages/client/package.json', import.meta.url), 'utf8'),
) as {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};
const DECLARED = new Set([
  ...Object.keys(CLIENT_PACKAGE.dependencies),
  ...Object.keys(CLIENT_PACKAGE.peerDependencies),
]);

/** Every module specifier a file imports, re-exports or loads with import(). */
function specifiers(text: string): string[] {
  const found = [...text.matchAll(/(?:^|\s)(?:import|export)\b[^;]*?\bfrom\s+'([^']+)'/gm)].map(
    ([, name]) => name ?? '',
  );
  for (const [, name] of text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)) found.push(name ?? '');
  return found;
}

/** The package a bare specifier names: `@scope/name` or `name`, without a subpath. */
function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

function sources(folder: string): string[] {
  return readdirSync(new URL(`${folder}/`, SRC)).filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'));
}

/** The contract's modules: the service's code, the client's types. */
const isContract = (name: string) => /^contract(-[a-z]+)?\.ts$/.test(name);

describe("the client's side of memgate", () => {
  it.each(CLIENT_SIDE)('src/%s imports only src/client, src/integrations and src/shared', (folder) => {
    const names = sources(folder);
    expect(names.length).toBeGreaterThan(2);
    const outside: string[] = [];
    for (const name of names) {
      for (const specifier of specifiers(readFileSync(new URL(`${folder}/${name}`, SRC), 'utf8'))) {
        const up = /^\.\.\/([a-z-]+)\//.exec(specifier)?.[1];
        if (up !== undefined && !CLIENT_SIDE.includes(up)) outside.push(`${name}: ${specifier}`);
      }
    }
    expect(outside).toEqual([]);
  });

  it.each(CLIENT_SIDE)(
    "src/%s imports only node: modules and what memgate-client's package.json declares",
    (folder) => {
      const undeclared: string[] = [];
      for (const name of sources(folder)) {
        if (folder === 'shared' && isContract(name)) continue;
        for (const specifier of specifiers(readFileSync(new URL(`${folder}/${name}`, SRC), 'utf8'))) {
          if (specifier.startsWith('.') || specifier.startsWith('node:')) continue;
          if (!DECLARED.has(packageName(specifier))) undeclared.push(`${name}: ${specifier}`);
        }
      }
      expect(undeclared).toEqual([]);
    },
  );

  it("takes only types from the contract's modules", () => {
    const statements: string[] = [];
    for (const folder of CLIENT_SIDE) {
      for (const name of sources(folder)) {
        if (folder === 'shared' && isContract(name)) continue;
        const text = readFileSync(new URL(`${folder}/${name}`, SRC), 'utf8');
        const pattern = /^(?:import|export)\b[^;]*?\bfrom\s+'[^']*\/contract(?:-[a-z]+)?\.js'/gm;
        for (const [statement] of text.matchAll(pattern)) statements.push(`${folder}/${name}: ${statement}`);
      }
    }
    expect(statements.length).toBeGreaterThan(2);
    expect(statements.filter((statement) => !/: (?:import|export) type\b/.test(statement))).toEqual([]);
  });

  it("leaves the contract's code out of memgate-client's package", () => {
    const files = (CLIENT_PACKAGE as unknown as { files: string[] }).files;
    expect(files).toContain('!dist/shared/contract*.js');
    // contract-kit, contract, contract-service and contract-schemas (their schemas as JSON): all left out by that one pattern.
    expect(sources('shared').filter(isContract).sort()).toEqual([
      'contract-kit.ts',
      'contract-schemas.ts',
      'contract-service.ts',
      'contract.ts',
    ]);
  });
});
