// memgate's library ships alone as memgate-limiter (packages/limiter), built from
// src/library.ts and every module it imports. That package must stay light (issue 40: at most
// 10 packages and 5 MB in an app, no native module, no server), so this walks the modules the
// build compiles and holds them to it: no server of memgate's, no package but the ones
// memgate-limiter declares, and no package named by types alone (an app's strict type check
// would look for it).
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { Released as ContractReleased, ReleaseBody } from './shared/contract.js';
import type { Released, ReleaseRequest } from './library.js';

const SRC = dirname(fileURLToPath(import.meta.url));
const PACKAGE = JSON.parse(readFileSync(join(SRC, '../packages/limiter/package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  files: string[];
};
const MEMGATE = JSON.parse(readFileSync(join(SRC, '../package.json'), 'utf8')) as {
  version: string;
  dependencies: Record<string, string>;
};

/** The folders of src/ the library is made of; the service's (http, grpc, commands, usage, …) stay out. */
const LIBRARY_FOLDERS = ['config', 'counting', 'store', 'shared'];

interface Import {
  readonly from: string;
  readonly specifier: string;
  /** `import type` / `export type`: erased from the JavaScript, kept in the declarations. */
  readonly typeOnly: boolean;
}

/** Every import and re-export of a module, whether its code is loaded or its types only. */
function importsOf(file: string): Import[] {
  const text = readFileSync(join(SRC, file), 'utf8');
  const found: Import[] = [];
  for (const [, type, specifier] of text.matchAll(/^\s*(?:import|export)\s+(type\s+)?[^;]*?\bfrom\s+'([^']+)'/gm))
    found.push({ from: file, specifier: specifier ?? '', typeOnly: type !== undefined });
  for (const [, specifier] of text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g))
    found.push({ from: file, specifier: specifier ?? '', typeOnly: false });
  return found;
}

/** The modules tsc compiles for memgate-limiter: library.ts and all it imports, types included. */
function libraryModules(): { modules: Set<string>; imports: Import[] } {
  const modules = new Set<string>();
  const imports: Import[] = [];
  const pending = ['library.ts'];
  while (pending.length > 0) {
    const file = pending.pop() as string;
    if (modules.has(file)) continue;
    modules.add(file);
    for (const found of importsOf(file)) {
      imports.push(found);
      if (found.specifier.startsWith('.'))
        pending.push(relative(SRC, join(SRC, dirname(file), found.specifier.replace(/\.js$/, '.ts'))));
    }
  }
  return { modules, imports };
}

const packageName = (specifier: string) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

/** The HTTP contract's modules: TypeBox schemas, whose code memgate-limiter leaves out of its tarball. */
const isContract = (file: string) => /^shared\/contract(-[a-z]+)?\.ts$/.test(file);

describe('memgate-limiter, the library alone', () => {
  const { modules, imports } = libraryModules();

  it('is made of the limiter, its stores and policies: no server module of memgate', () => {
    expect(modules.size).toBeGreaterThan(50);
    const outside = [...modules].filter(
      (file) => file !== 'library.ts' && !LIBRARY_FOLDERS.includes(file.split('/')[0] ?? ''),
    );
    expect(outside).toEqual([]);
    // The readers of files the library does not load itself: Envoy's (ajv, yaml's documents).
    expect([...modules].filter((file) => /envoy-config|policy-parse|http|grpc/.test(file))).toEqual([]);
  });

  it("loads only node: modules and the packages memgate-limiter's package.json declares", () => {
    const declared = new Set(Object.keys(PACKAGE.dependencies));
    const undeclared = imports
      .filter(({ typeOnly, from }) => !typeOnly && !isContract(from))
      .filter(({ specifier }) => !specifier.startsWith('.') && !specifier.startsWith('node:'))
      .filter(({ specifier }) => !declared.has(packageName(specifier)))
      .map(({ from, specifier }) => `${from}: ${specifier}`);
    expect(undeclared).toEqual([]);
  });

  it('names no package in its types alone, and takes only types from the contract', () => {
    const typeOnlyPackages = imports
      .filter(({ specifier, typeOnly, from }) => typeOnly && !isContract(from) && !specifier.startsWith('.'))
      .filter(({ specifier }) => !specifier.startsWith('node:'))
      .map(({ from, specifier }) => `${from}: ${specifier}`);
    expect(typeOnlyPackages).toEqual([]);
    const contractLoaded = imports
      .filter(
        ({ specifier, typeOnly, from }) =>
          !typeOnly && !isContract(from) && /\/contract(-[a-z]+)?\.js$/.test(specifier),
      )
      .map(({ from, specifier }) => `${from}: ${specifier}`);
    expect(contractLoaded).toEqual([]);
    expect(PACKAGE.files).toContain('!dist/shared/contract*.js');
  });

  it("declares each package at memgate's own version range, and memgate's version", () => {
    for (const [name, range] of Object.entries(PACKAGE.dependencies))
      expect({ name, range }).toEqual({ name, range: MEMGATE.dependencies[name] });
    expect(
      (JSON.parse(readFileSync(join(SRC, '../packages/limiter/package.json'), 'utf8')) as { version: string }).version,
    ).toBe(MEMGATE.version);
  });

  it("answers release with the HTTP contract's shapes, written out without TypeBox", () => {
    expectTypeOf<ReleaseBody>().toExtend<ReleaseRequest>();
    expectTypeOf<ReleaseRequest>().toExtend<ReleaseBody>();
    expectTypeOf<ContractReleased>().toExtend<Released>();
    expectTypeOf<Released>().toExtend<ContractReleased>();
  });
});
