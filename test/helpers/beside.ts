// A test's heavy work that waits on no clock (npm installs, builds, compiles), run at the lowest
// priority when `npm test` runs the test beside the others: it then takes the cores they leave
// idle. PACKAGE_TESTS_BESIDE, set by scripts/test.mjs, names the file where each such program's
// process group is written, for npm test to stop them if it is stopped. Otherwise it runs as
// execFile would. What the test talks to (memcached, memgate) is not started here: it keeps the
// usual priority, as it answers within deadlines.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { spawnLowest, stopGroupsIn } from '../../scripts/lib/lowest-priority.mjs';

/** The file of process groups, when run beside the other tests; undefined otherwise. */
const GROUPS_FILE = process.env.PACKAGE_TESTS_BESIDE === '' ? undefined : process.env.PACKAGE_TESTS_BESIDE;

/** What a command printed; thrown with its exit code (or signal) when that is not 0, as execFile does. */
export interface Ran {
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `file args` (at the lowest priority beside the others); resolves to its output, or rejects with `code` too. */
export function runBeside(
  file: string,
  args: readonly string[],
  options: { readonly cwd?: string; readonly env?: NodeJS.ProcessEnv } = {},
): Promise<Ran> {
  if (GROUPS_FILE === undefined) return promisify(execFile)(file, args, options);
  return new Promise((resolve, reject) => {
    const child = spawnLowest(file, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'], groupsFile: GROUPS_FILE });
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolve({ stdout, stderr });
      else
        reject(
          Object.assign(new Error(`${file} ${args.join(' ')} exited with ${String(code ?? signal)}\n${stderr}`), {
            code,
            signal,
            stdout,
            stderr,
          }),
        );
    });
  });
}

/** Stops what runBeside started and is still running (a test that failed before it was done). */
export function stopBeside(): void {
  if (GROUPS_FILE !== undefined) stopGroupsIn(GROUPS_FILE, 'SIGKILL');
}
