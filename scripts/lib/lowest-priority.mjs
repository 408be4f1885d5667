// @ts-check
// Work that waits on no clock, run beside tests that do, at the lowest CPU priority: it then
// takes only the cores the tests leave idle. Plain JavaScript: `npm test` (scripts/test.mjs)
// uses it before anything is built, and test/packages.test.ts for its installs and compiles.
// POSIX only (`nice`, process groups), as `npm test` is.
import { spawn } from 'node:child_process';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The lowest priority a process can have (src/config/thread-priority.ts's MAX_NICE: not
 * imported, as this runs before anything is built).
 */
const MAX_NICE = 19;

/**
 * Starts `command args` in a session of its own (a process group too, so that a signal to the
 * group stops all it started) at the lowest priority: niced, so every thread and process it
 * starts inherits it, and its session lowered (lowerSession). With `groupsFile`, its process
 * group is added to that file, for stopGroupsIn.
 * @param {string} command
 * @param {readonly string[]} args
 * @param {Omit<import('node:child_process').SpawnOptions, 'detached'> & { groupsFile?: string | undefined }} options
 * @returns {import('node:child_process').ChildProcess}
 */
export function spawnLowest(command, args, { groupsFile, ...options }) {
  const child = spawn('nice', ['-n', String(MAX_NICE), command, ...args], { ...options, detached: true });
  const { pid } = child;
  if (pid !== undefined) {
    if (groupsFile !== undefined) {
      appendFileSync(groupsFile, `${String(pid)}\n`);
      // Once it has ended its pid may be another process's: no signal must reach that.
      child.once('exit', () => forgetGroup(groupsFile, pid));
    }
    void lowerSession(pid);
  }
  return child;
}

/**
 * Takes `pid` out of `file` (spawnLowest's groupsFile, written by one process).
 * @param {string} file
 * @param {number} pid
 */
function forgetGroup(file, pid) {
  try {
    const left = readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== '' && line !== String(pid));
    writeFileSync(file, left.map((line) => `${line}\n`).join(''));
  } catch {
    // Emptied or removed by stopGroupsIn meanwhile.
  }
}

/**
 * Sends `signal` to every process group named in `file` (spawnLowest's groupsFile), and empties it.
 * @param {string} file
 * @param {NodeJS.Signals} signal
 */
export function stopGroupsIn(file, signal) {
  let text;
  try {
    text = readFileSync(file, 'utf8');
    writeFileSync(file, '');
  } catch {
    return; // None was started.
  }
  for (const pid of text.split('\n').filter(Boolean)) {
    try {
      process.kill(-Number(pid), signal);
    } catch {
      // Gone already.
    }
  }
}

/** Writes of an autogroup's nice, one after another (see lowerSession). */
let lowering = Promise.resolve();

/**
 * Lowers the session `pid` leads, where Linux shares the CPU between sessions (autogroup, on by
 * default on desktops and on Debian): sessions get the cores evenly whatever their processes'
 * nice values, so a niced program leading a session of its own still took half the machine from
 * the tests. The session's nice covers the processes it starts later too. Linux takes one such
 * write per 100 ms from a user who is not root (EAGAIN otherwise): writes wait their turn, and
 * one refused is tried again after that time. Nothing where there is no such file, or it may
 * not be written.
 * @param {number} pid
 */
function lowerSession(pid) {
  lowering = lowering.then(async () => {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        writeFileSync(`/proc/${String(pid)}/autogroup`, String(MAX_NICE));
        return;
      } catch (error) {
        if (/** @type {NodeJS.ErrnoException} */ (error).code !== 'EAGAIN') return; // No autogroup, or gone.
        await sleep(110);
      }
    }
  });
  return lowering;
}
