// @ts-check
// Copies each declaration file of a build (dist/**/*.d.ts) to dist/cjs-types/, marked as
// CommonJS. A TypeScript program compiled as CommonJS under `moduleResolution` node16 refuses to
// import declarations of an ES module (TS1479), although Node 20.19+ runs `require()` of it: the
// packages' `exports` give `require` these copies, which describe what require() returns.
// Usage: node scripts/cjs-types.mjs <dist folder>...
import console from 'node:console';
import { cpSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import process from 'node:process';

const COPIES = 'cjs-types';

/** @param {string} dist */
function copyDeclarations(dist) {
  const target = join(dist, COPIES);
  rmSync(target, { recursive: true, force: true });
  const entries = readdirSync(dist, { recursive: true, withFileTypes: true });
  let copied = 0;
  for (const entry of entries) {
    if (!entry.isFile() || !entry.name.endsWith('.d.ts')) continue;
    const from = join(entry.parentPath, entry.name);
    const to = join(target, relative(dist, from));
    mkdirSync(join(to, '..'), { recursive: true });
    cpSync(from, to);
    copied++;
  }
  if (copied === 0) throw new Error(`${dist} holds no .d.ts: build it first`);
  writeFileSync(join(target, 'package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);
}

const folders = process.argv.slice(2);
if (folders.length === 0) {
  console.error('usage: node scripts/cjs-types.mjs <dist folder>...');
  process.exit(2);
}
for (const folder of folders) copyDeclarations(folder);
