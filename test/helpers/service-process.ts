import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { uniquePrefix } from './memcached.js';

/** The service as `npm start` runs it, from source, on a free port. */
export interface ServiceProcess {
  /** The process `node dist/main.js` started: the launcher, unless node was given a heap limit. */
  readonly child: ChildProcess;
  /** The process serving (its start-up line's pid): the launcher's child, or the same. */
  readonly servicePid: number;
  /** Its log lines so far, parsed. */
  readonly logs: Record<string, unknown>[];
  readonly stderr: () => string;
  /** Its exit code, once its output has been read to the end. */
  readonly exit: Promise<number | null>;
  readonly port: number;
  readonly url: string;
  /** SIGTERM unless it has exited, then its exit code. */
  stop(): Promise<number | null>;
}

/** What starts memgate: `node dist/main.js` in the checkout unless a test runs an installed one. */
export interface ServiceCommand {
  /** The program and its first arguments (`args` follow them). */
  readonly command?: readonly string[];
  readonly cwd?: string;
  /**
   * In a process group (and session) of its own, as a terminal's foreground job: a signal
   * to the group (`process.kill(-child.pid)`) reaches every process in it, as Ctrl-C does.
   */
  readonly ownGroup?: boolean;
}

/**
 * Starts the service as `npm start` runs it, `node dist/main.js` (built once per test run by
 * test/setup/shared-run.ts), with PORT=0 on 127.0.0.1 plus `env`, and resolves once it
 * listens. Its usage history goes to a file of its own in a temporary folder unless `env`
 * names one (one process writes a file, and the checkout's ./data stays clean), its keys
 * start with a prefix of its own unless `env` names one (tests share a memcached), and it
 * stops without a drain unless `env` gives one: the default 5 s drain, for a load balancer to
 * notice, is test/shutdown.test.ts's subject, and elsewhere only made each stop wait: about
 * 150 s summed over the integration project's files (that project is CPU-bound, so its own
 * wall time hardly moved).
 */
export async function startServiceProcess(
  env: Record<string, string>,
  args: string[] = [],
  { command = [process.execPath, 'dist/main.js'], cwd, ownGroup = false }: ServiceCommand = {},
): Promise<ServiceProcess> {
  const usageFolder = mkdtempSync(join(tmpdir(), 'memgate-service-'));
  const usageDb = join(usageFolder, 'usage.db');
  const [program = process.execPath, ...programArgs] = command;
  const child = spawn(program, [...programArgs, ...args], {
    cwd,
    env: {
      PATH: process.env.PATH,
      PORT: '0',
      HOST: '127.0.0.1',
      MEMGATE_USAGE_DB: usageDb,
      MEMGATE_KEY_PREFIX: uniquePrefix(),
      // A test's answers must not hang on how busy the machine is: a service starved of CPU by
      // a parallel run sees a second of event-loop lag and sheds checks with 503. The tests of
      // shedding set it themselves.
      MEMGATE_MAX_EVENT_LOOP_DELAY_MS: '0',
      MEMGATE_SHUTDOWN_DRAIN_MS: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: ownGroup,
  });
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // 'close' comes after the child's output is fully read; 'exit' can come before.
  const exit = new Promise<number | null>((resolve) => child.once('close', resolve));
  void exit.then(() => {
    rmSync(usageFolder, { recursive: true, force: true });
  });
  const listening = new Promise<{ port: number; pid: number }>((resolve, reject) => {
    let pending = '';
    child.stdout.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        const entry = JSON.parse(line) as Record<string, unknown>;
        logs.push(entry);
        if (typeof entry.port === 'number') resolve({ port: entry.port, pid: Number(entry.pid) });
      }
    });
    void exit.then((code) => {
      reject(new Error(`memgate exited with ${String(code)} before listening:\n${stderr}`));
    });
  });
  const { port, pid: servicePid } = await listening;
  const stop = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    return exit;
  };
  return { child, servicePid, logs, stderr: () => stderr, exit, port, url: `http://127.0.0.1:${port}`, stop };
}
