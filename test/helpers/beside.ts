// A test's heavy work that waits on no clock (npm installs, builds, compiles), run at the lowest
// priority when `npm test` runs the test beside the others (PACKAGE_TESTS_BESIDE, set by
// scripts/test.mjs): it then takes the cores they leave idle. Otherwise it runs as execFile
// would. What the test talks to (memcached, memgate) is not started here: it keeps the usual
// priority, as it answers within deadlines.
import { execFile, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { spawnLowest } from '../../scripts/lib/lowest-priority.mjs';

const BESIDE = process.env.PACKAGE_TESTS_BESIDE === '1';

/** What a command printed; thrown with its exit code when that is not 0, as execFile does. */
export interface Ran {
  readonly stdout: string;
  readonly stderr: string;
}

/** Started at the lowest priority and still running: each leads a process group of its own. */
const running = new Set<ChildProcess>();

/** Runs `file args` (at the lowest priority beside the others); resolves to its output, or rejects with `code` too. */
export function runBeside(
  file: string,
  args: readonly string[],
  options: { readonly cwd?: string; readonly env?: NodeJS.ProcessEnv } = {},
): Promise<Ran> {
  if (!BESIDE) return promisify(execFile)(file, args, options);
  return new Promise((resolve, reject) => {
    const child = spawnLowest(file, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', (error) => {
      running.delete(child);
      reject(error);
    });
    child.on('close', (code, signal) => {
      running.delete(child);
      if (code === 0) resolve({ stdout, stderr });
      else
        reject(
          Object.assign(new Error(`${file} ${args.join(' ')} exited with ${String(code ?? signal)}\n${stderr}`), {
            code: code ?? 1,
            stdout,
            stderr,
          }),
        );
    });
  });
}

/** Stops what runBeside started and is still running (a test that failed before it was done). */
export function stopBeside(): void {
  for (const child of running) {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
  }
  running.clear();
}
