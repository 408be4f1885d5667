// @ts-check
// `npm test`: the type check and lint beside the vitest run instead of before it. On 2 cores
// they take about a minute of the run's wall time when run first, and the integration tests
// leave a core half idle waiting on the programs they drive. A failure of either stops vitest
// at once and prints their output, as running them first would have. Given vitest arguments
// (`npm test -- test/clock.test.ts`), it runs them first, as before: a file picked alone may be
// one that times itself and wants the machine to itself, and the checks finish within the
// integration project of a whole run, before the slow project starts.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import console from 'node:console';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { constants } from 'node:os';

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
/** The lowest priority, the checks' (scripts/test.mjs runs before any build: not src/config/thread-priority.ts's). */
const MAX_NICE = 19;
const vitestArgs = process.argv.slice(2);

/** The checks' processes running now, each leading a process group. */
/** @type {Set<import('node:child_process').ChildProcess>} */
const running = new Set();
/** vitest's process, which leads a group of its own. */
/** @type {import('node:child_process').ChildProcess | undefined} */
let vitestChild;
/** @type {NodeJS.Signals | undefined} */
let interrupted;

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
 * `npm run <script>` at the lowest priority where `nice` exists (every thread and process it
 * starts inherits it): the checks are to take only the cores the tests leave idle. Measured
 * on 2 cores with lowerSession: the type check took 148 s instead of 20, lint 240 s instead of
 * 109, both still done within the integration tests.
 * @param {string} script
 * @returns {[string, string[]]}
 */
function checkCommand(script) {
  const npm = /** @type {const} */ ([NPM, 'run', script, '--silent']);
  return process.platform === 'win32' ? [npm[0], npm.slice(1)] : ['nice', ['-n', String(MAX_NICE), ...npm]];
}

/**
 * Lowers the whole session a check leads, where Linux groups the CPU by session (autogroup,
 * on by default on desktops and Debian): vitest and each check lead sessions of their own, and
 * such groups share the cores evenly whatever their processes' nice values, so a lone check
 * took half the machine from every test running. The group's nice covers the processes it
 * starts later too. Nothing where there is no such file, or it may not be written.
 * @param {number | undefined} pid
 */
function lowerSession(pid) {
  if (pid === undefined) return;
  try {
    writeFileSync(`/proc/${pid}/autogroup`, String(MAX_NICE));
  } catch {
    // No autogroup here: the nice value of checkCommand is what counts.
  }
}

/**
 * Runs `npm run <script>` with its output kept, to print once it is done.
 * @param {string} script
 * @returns {Promise<{ script: string, code: number, output: string, seconds: number }>}
 */
function quietly(script) {
  const started = performance.now();
  return new Promise((resolve) => {
    // A group of its own, as vitest's: npm passes a signal to its shell alone, not to the program it waits on.
    const child = spawn(...checkCommand(script), { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    lowerSession(child.pid);
    running.add(child);
    let output = '';
    child.stdout.on('data', (chunk) => (output += String(chunk)));
    child.stderr.on('data', (chunk) => (output += String(chunk)));
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
    const result = await quietly(script);
    if (interrupted) return undefined;
    if (result.code !== 0) return result;
    // A lint warning fails nothing, but is still shown.
    if (result.output.trim() !== '') process.stdout.write(result.output);
    console.log(`memgate: npm run ${script} passed (${String(result.seconds)} s)`);
  }
  return undefined;
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

/** Runs vitest in a process group of its own, so that stopping it stops its workers and the programs they started. */
function startVitest() {
  const child = spawn(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', ...vitestArgs], {
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
    for (const child of running) stop(child, signal, { group: true });
    if (vitestChild) stop(vitestChild, signal, { group: true });
  });
// However this process ends, vitest's group does not outlive it.
process.on('exit', () => {
  for (const child of running) stop(child, 'SIGKILL', { group: true });
  if (vitestChild) stop(vitestChild, 'SIGKILL', { group: true });
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
    finish(await startVitest().done);
  } else finish(1);
} else {
  const vitest = startVitest();
  const checked = checks();
  const failed = await Promise.race([checked, vitest.done.then(() => undefined)]);
  if (failed) {
    stop(vitest.child, 'SIGTERM', { group: true });
    await vitest.done;
    reportFailed(failed, true);
    finish(1);
  } else {
    const vitestCode = await vitest.done;
    const late = await checked;
    if (late) reportFailed(late, false);
    finish(late ? 1 : vitestCode);
  }
}
