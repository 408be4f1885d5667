// @ts-check
// Work that waits on no clock, run beside tests that do, at the lowest CPU priority: it then
// takes only the cores the tests leave idle. Plain JavaScript: `npm test` (scripts/test.mjs)
// uses it before anything is built, and test/packages.test.ts for its installs and compiles.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import process from 'node:process';

/** The lowest priority a process can have. */
export const MAX_NICE = 19;

/**
 * Starts `command args` in a session of its own (a process group too, so that a signal to the
 * group stops all it started) at the lowest priority: niced where `nice` exists, so every thread
 * and process it starts inherits it, and its session lowered (lowerSession).
 * @param {string} command
 * @param {readonly string[]} args
 * @param {Omit<import('node:child_process').SpawnOptions, 'detached'>} options
 * @returns {import('node:child_process').ChildProcess}
 */
export function spawnLowest(command, args, options) {
  const child =
    process.platform === 'win32'
      ? spawn(command, args, { ...options, detached: true })
      : spawn('nice', ['-n', String(MAX_NICE), command, ...args], { ...options, detached: true });
  lowerSession(child.pid);
  return child;
}

/**
 * Lowers the session `pid` leads, where Linux shares the CPU between sessions (autogroup, on by
 * default on desktops and on Debian): sessions get the cores evenly whatever their processes'
 * nice values, so a niced program leading a session of its own still took half the machine from
 * the tests. The session's nice covers the processes it starts later too. Nothing where there is
 * no such file, or it may not be written.
 * @param {number | undefined} pid
 */
function lowerSession(pid) {
  if (pid === undefined) return;
  try {
    writeFileSync(`/proc/${pid}/autogroup`, String(MAX_NICE));
  } catch {
    // No autogroup here: the nice value is what counts.
  }
}
