// @ts-check
// `npm test`: the type check and lint beside the vitest run instead of before it. On 2 cores
// they take about a minute of the run's wall time when run first, and the integration tests
// leave a core half idle waiting on the programs they drive. A failure of either stops vitest
// at once and prints their output, as running them first would have; vitest's arguments pass
// through (`npm test -- test/server.test.ts`).
import { spawn } from 'node:child_process';
import console from 'node:console';
import { performance } from 'node:perf_hooks';
import process from 'node:process';

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/**
 * Runs `npm run <script>` with its output kept, to print only once it is done.
 * @param {string} script
 * @returns {Promise<{ script: string, code: number, output: string, seconds: number }>}
 */
function quietly(script) {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(NPM, ['run', script, '--silent'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += String(chunk)));
    child.stderr.on('data', (chunk) => (output += String(chunk)));
    child.on('close', (code, signal) =>
      resolve({
        script,
        code: code ?? (signal ? 1 : 0),
        output,
        seconds: Math.round((performance.now() - started) / 1000),
      }),
    );
  });
}

// One after the other: each is a TypeScript program over the whole tree, and together with
// vitest's workers they would hold the 2 cores the integration tests time their deadlines on.
const checks = (async () => {
  for (const script of ['typecheck', 'lint']) {
    const result = await quietly(script);
    if (result.code !== 0) return result;
    console.log(`memgate: npm run ${script} passed (${String(result.seconds)} s)`);
  }
  return undefined;
})();

// Its own process group, so that a failed check stops its workers and the programs they started.
const vitest = spawn(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', ...process.argv.slice(2)], {
  stdio: 'inherit',
  detached: true,
});
/** @type {Promise<number>} */
const vitestDone = new Promise((resolve) => {
  vitest.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
});
// ^C reaches the whole foreground group but not a detached one: pass it on.
for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM']))
  process.on(signal, () => {
    if (vitest.pid !== undefined) process.kill(-vitest.pid, signal);
  });

const failed = await Promise.race([checks, vitestDone.then(() => undefined)]);
if (failed) {
  if (vitest.pid !== undefined && vitest.exitCode === null) process.kill(-vitest.pid, 'SIGTERM');
  await vitestDone;
  process.stderr.write(failed.output);
  console.error(`memgate: npm run ${failed.script} failed (exit ${String(failed.code)}); the tests were stopped`);
  process.exit(1);
}
const vitestCode = await vitestDone;
const late = await checks;
if (late) {
  process.stderr.write(late.output);
  console.error(`memgate: npm run ${late.script} failed (exit ${String(late.code)})`);
  process.exit(1);
}
process.exit(vitestCode);
