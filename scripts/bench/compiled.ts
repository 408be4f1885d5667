// memgate's code as a benchmark should run it. The bench builds dist/ and sets
// MEMGATE_BENCH_COMPILED=1, so that it measures the JavaScript `npm start` runs: under tsx
// every closure memgate creates on the hot path would also pay for esbuild's name wrapper.
// Without it (the tests of the bench servers), the TypeScript source.
import { pathToFileURL } from 'node:url';
import type * as Index from '../../src/index.js';

export const COMPILED_ENV = 'MEMGATE_BENCH_COMPILED';
/** Another commit's build to load instead (baseline.ts), by the folder holding its dist/. */
export const BUILD_ENV = 'MEMGATE_BENCH_BUILD';

export async function memgateModules(): Promise<typeof Index> {
  const other = process.env[BUILD_ENV];
  if (other) return (await import(pathToFileURL(`${other}/dist/index.js`).href)) as typeof Index;
  const root = process.env[COMPILED_ENV] === '1' ? '../../dist' : '../../src';
  return (await import(`${root}/index.js`)) as typeof Index;
}
