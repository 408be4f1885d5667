// docs/architecture.md is the map of the code, and this test keeps it true: every file or
// folder it names in backquotes exists, and every module of src/ is named by it. A name may
// be short (`plan.ts`) where its paragraph names the folder (`windows/`), as the map reads.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../', import.meta.url).pathname;
const MAP = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');

/** Every file and folder under `folder`, as paths from the repository's root; folders end in `/`. */
function walk(folder: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync(join(ROOT, folder))) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = folder === '' ? name : `${folder}/${name}`;
    if (statSync(join(ROOT, path)).isDirectory()) found.push(`${path}/`, ...walk(path));
    else found.push(path);
  }
  return found;
}

const TREE = ['src', 'scripts', 'test', 'packages', 'dashboard', 'proto', 'examples', 'config', 'docs'].flatMap(
  (folder) => [`${folder}/`, ...walk(folder)],
);
const ROOT_FILES = readdirSync(ROOT).filter((name) => statSync(join(ROOT, name)).isFile());
const EVERYTHING = [...TREE, ...ROOT_FILES];

/** src/'s modules: every .ts file but the tests. */
const MODULES = TREE.filter((path) => path.startsWith('src/') && path.endsWith('.ts') && !path.endsWith('.test.ts'));

/** A backquoted word that names a file or folder: a path ending in an extension or a slash. */
const PATH_LIKE = /^[A-Za-z0-9_.\-/]+(\.(ts|mjs|js|css|html|proto|yaml|json|md)|\/)$/;

interface Paragraph {
  readonly names: readonly string[];
  /** The folders it names, where its short names are read. */
  readonly folders: readonly string[];
}

/** The map's paragraphs (a table row is one), each with the paths it names in backquotes. */
function paragraphs(text: string): Paragraph[] {
  const blocks = text.split(/\n\s*\n|\n(?=\|)/);
  return blocks.map((block) => {
    const names = [...block.matchAll(/`([^`\s]+)`/g)]
      .map(([, name]) => (name ?? '').replace(/^\.\//, ''))
      .filter((name) => PATH_LIKE.test(name) && !name.includes('://'));
    return { names, folders: names.filter((name) => name.endsWith('/')) };
  });
}

/** The paths `name` names: those ending in it at a `/`, read in its paragraph's folders when it matches more than one. */
function named(name: string, { folders }: Paragraph): string[] {
  const matches = EVERYTHING.filter((path) => path === name || path.endsWith(`/${name}`));
  if (matches.length <= 1) return matches;
  const inFolders = matches.filter((path) => {
    const folder = path.slice(0, path.lastIndexOf('/', path.length - 2) + 1);
    return folders.some((given) => folder === given || folder.endsWith(`/${given}`));
  });
  return inFolders.length > 0 ? inFolders : matches.filter((path) => path === `src/${name}` || path === name);
}

const PARAGRAPHS = paragraphs(MAP);

describe('docs/architecture.md', () => {
  it('names only files and folders that exist', () => {
    // What a build writes (dist/) is not in a checkout.
    const missing = PARAGRAPHS.flatMap((paragraph) =>
      paragraph.names.filter((name) => !/(^|\/)dist\//.test(name) && named(name, paragraph).length === 0),
    );
    expect([...new Set(missing)]).toEqual([]);
  });

  it('names every module of src/', () => {
    const seen = new Set(PARAGRAPHS.flatMap((paragraph) => paragraph.names.flatMap((name) => named(name, paragraph))));
    const unnamed = MODULES.filter((module) => !seen.has(module));
    expect(unnamed.map((module) => relative('src', module))).toEqual([]);
  });

  it('would notice a module it does not name, and a name of none', () => {
    // The test's own reading, on a map of two paragraphs.
    const [folder, short] = paragraphs('**`src/counting/algorithms/`**: `windows/` (`plan.ts`)\n\n`gone.ts`');
    expect(folder && named('plan.ts', folder)).toEqual(['src/counting/algorithms/windows/plan.ts']);
    expect(short && named('gone.ts', short)).toEqual([]);
    expect(MODULES.length).toBeGreaterThan(100);
  });

  it('keeps service.ts to wiring: the lines an operator reads are written in operator-log/', () => {
    const service = readFileSync(join(ROOT, 'src/service.ts'), 'utf8');
    expect(service.match(/\b(?:logger|log)\.(?:trace|debug|info|warn|error|fatal)\(/g) ?? []).toEqual([]);
    expect(service).toContain("from './operator-log/");
  });
});
