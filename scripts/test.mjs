// @ts-check
// `npm test`: one build of dist/, then the vitest run (every project but `packages`), and beside
// it the type check and lint at the lowest priority, and the package tests in a vitest of their
// own whose installs and compiles run at that priority (packageTests): work that waits on no
// clock, done in the cores the tests leave idle. On 2 cores the checks took about a minute of
// the run's wall time when run first, and the integration tests leave part of a core idle
// waiting on the programs they drive, the slow project most of one. A check or the package
// tests failing stops everything at once and prints its output. Given vitest arguments
// (`npm test -- test/clock.test.ts`), it runs the checks first, then that vitest alone: a file
// picked alone may be one that times itself and wants the machine to itself.
import { spawn } from 'node:child_process';
import console from 'node:console';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { rmSync, writeFileSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnLowest, stopGroupsIn } from './lib/lowest-priority.mjs';

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const vitestArgs = process.argv.slice(2);

/** The npm runs going on now (the build, the checks, the package tests), each leading a process group. */
/** @type {Set<import('node:child_process').ChildProcess>} */
const running = new Set();
/** vitest's process, which leads a group of its own. */
/** @type {import('node:child_process').ChildProcess | undefined} */
let vitestChild;
/** @type {NodeJS.Signals | undefined} */
let interrupted;
/** Set once the run is being stopped (a failure, or a signal): nothing more is started. */
let stopping = false;
/**
 * Where the package tests' programs at the lowest priority write their process groups: each
 * leads a session of its own, which a signal to the package tests' group does not reach
 * (test/helpers/beside.ts).
 */
const BESIDE_GROUPS = join(tmpdir(), `memgate-npm-test-${String(process.pid)}.groups`);

/** Stops everything started, with `signal`. */
function stopAll(/** @type {NodeJS.Signals} */ signal) {
  stopping = true;
  for (const child of running) stop(child, signal, { group: true });
  if (vitestChild) stop(vitestChild, signal, { group: true });
  stopGroupsIn(BESIDE_GROUPS, signal);
}

/**
 * Sends `signal` to a child, or to its process group when it leads one; one already gone is no error.
 * @param {import('node:child_process').ChildProcess} child
 * @param {NodeJS.Signals} signal
 * @param {{ group?: boolean }} [options]
 */
function stop(child, signal, { group = false } = {}) {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(group ? -child.pid : child.pid, signal);
  } catch {
    // Gone meanwhile.
  }
}

/**
 * Runs `npm run <script>` with its output kept, to print once it is done: at the lowest priority
 * (the checks: measured on 2 cores, the type check took 148 s instead of 20 and lint 240 s
 * instead of 109, both still done within the integration tests) unless `lowest` is false.
 * @param {string} script
 * @param {{ lowest?: boolean, env?: NodeJS.ProcessEnv }} [options]
 * @returns {Promise<{ script: string, code: number, output: string, seconds: number }>}
 */
function quietly(script, { lowest = true, env = process.env } = {}) {
  const started = performance.now();
  return new Promise((resolve) => {
    // A group of its own, as vitest's: npm passes a signal to its shell alone, not to the program it waits on.
    const args = ['run', script, '--silent'];
    /** @type {import('node:child_process').SpawnOptions} */
    const options = { stdio: ['ignore', 'pipe', 'pipe'], env };
    const child = lowest ? spawnLowest(NPM, args, options) : spawn(NPM, args, { ...options, detached: true });
    running.add(child);
    let output = '';
    child.stdout?.on('data', (chunk) => (output += String(chunk)));
    child.stderr?.on('data', (chunk) => (output += String(chunk)));
    child.on('close', (code, signal) => {
      running.delete(child);
      resolve({
        script,
        code: code ?? (signal ? 1 : 0),
        output,
        seconds: Math.round((performance.now() - started) / 1000),
      });
    });
  });
}

/** The type check, then lint (each a TypeScript program over the whole tree): the first that fails, or none. */
async function checks() {
  for (const script of ['typecheck', 'lint']) {
    if (stopping) return undefined;
    const result = await quietly(script);
    if (interrupted || stopping) return undefined;
    if (result.code !== 0) return result;
    // A lint warning fails nothing, but is still shown.
    if (result.output.trim() !== '') process.stdout.write(result.output);
    console.log(`memgate: npm run ${script} passed (${String(result.seconds)} s)`);
  }
  return undefined;
}

/**
 * The package tests (vitest's project `packages`) in a vitest of their own, beside the others:
 * about 130 s of CPU (npm installs, a build from git, strict tsc) that waits on no clock. That
 * work runs at the lowest priority (PACKAGE_TESTS_BESIDE, test/helpers/beside.ts), in the cores
 * the other tests leave idle, most of one while the slow project runs one file at a time; the
 * memcached and memgate it tests against at the usual one, as they answer within deadlines.
 * Their report is printed once they are done; a failure, or none.
 */
async function packageTests() {
  writeFileSync(BESIDE_GROUPS, '');
  const result = await quietly('test:packages', {
    lowest: false,
    env: { ...process.env, PACKAGE_TESTS_BESIDE: BESIDE_GROUPS },
  });
  if (interrupted || stopping) return undefined;
  if (result.code !== 0) return result;
  process.stdout.write(result.output);
  console.log(`memgate: npm run test:packages passed (${String(result.seconds)} s, beside the others)`);
  return undefined;
}

/**
 * The first of `jobs` to resolve to a failure, as soon as it does; undefined once all passed.
 * @template T
 * @param {Promise<T | undefined>[]} jobs
 * @returns {Promise<T | undefined>}
 */
function firstFailure(jobs) {
  return new Promise((resolve) => {
    for (const job of jobs) void job.then((failed) => failed && resolve(failed));
    void Promise.all(jobs).then(() => resolve(undefined));
  });
}

/**
 * @param {{ script: string, code: number, output: string }} failed
 * @param {boolean} stopped whether vitest was stopped for it
 */
function reportFailed(failed, stopped) {
  process.stderr.write(failed.output);
  console.error(
    `memgate: npm run ${failed.script} failed (exit ${String(failed.code)})${stopped ? '; the tests were stopped' : ''}`,
  );
}

/**
 * Runs vitest with `args` in a process group of its own, so that stopping it stops its workers
 * and the programs they started.
 * @param {readonly string[]} args
 */
function startVitest(args) {
  const child = spawn(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', ...args], {
    stdio: 'inherit',
    detached: true,
  });
  vitestChild = child;
  /** @type {Promise<number>} */
  const done = new Promise((resolve) => {
    child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
  return { child, done };
}

// ^C reaches the foreground group (this process) but not the groups of vitest and the checks,
// nor does a signal sent to this process alone: each is passed on, and the run ends as stopped.
for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM', 'SIGHUP']))
  process.on(signal, () => {
    interrupted = signal;
    stopAll(signal);
  });
// However this process ends, nothing it started outlives it.
process.on('exit', () => {
  stopAll('SIGKILL');
  rmSync(BESIDE_GROUPS, { force: true });
});

/** @param {number} code */
function finish(code) {
  process.exitCode = interrupted ? 128 + constants.signals[interrupted] : code;
}

if (vitestArgs.length > 0) {
  const failed = await checks();
  if (failed) {
    reportFailed(failed, false);
    finish(1);
  } else if (!interrupted) {
    finish(await startVitest(vitestArgs).done);
  } else finish(1);
} else {
  /** @type {{ script: string, code: number, output: string } | undefined} */
  let checkFailed;
  const checked = checks().then((failed) => (checkFailed = failed));
  // One build for both vitest runs (test/setup/shared-run.ts builds only when this is unset).
  const build = await quietly('build', { lowest: false });
  const failedFirst = build.code !== 0 ? build : checkFailed;
  if (interrupted || failedFirst) {
    stopAll('SIGTERM');
    if (!interrupted && failedFirst) reportFailed(failedFirst, false);
    finish(1);
  } else {
    process.env.DIST_BUILT_BY_NPM_TEST = '1';
    const vitest = startVitest(['--project', '!packages']);
    const sides = [checked, packageTests()];
    const failed = await Promise.race([firstFailure(sides), vitest.done.then(() => undefined)]);
    if (failed) {
      stopAll('SIGTERM');
      await vitest.done;
      reportFailed(failed, true);
      finish(1);
    } else {
      const vitestCode = await vitest.done;
      const late = await firstFailure(sides);
      if (late) reportFailed(late, false);
      finish(late ? 1 : vitestCode);
    }
  }
}
