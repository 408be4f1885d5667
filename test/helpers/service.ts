import { spawn, type ChildProcess } from 'node:child_process';

/** The service as `npm start` runs it (from source), listening on a free loopback port. */
export interface ServiceProcess {
  readonly child: ChildProcess;
  /** Every JSON log line so far. */
  readonly logs: Record<string, unknown>[];
  readonly stderr: () => string;
  /** Resolves with the exit code once the process has exited and its output is read. */
  readonly exit: Promise<number | null>;
  readonly url: string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

export interface ServiceOptions {
  /** Environment on top of PATH, PORT=0 and HOST=127.0.0.1. */
  readonly env?: Record<string, string>;
  readonly args?: readonly string[];
  /** Run before node, e.g. a libfaketime preload: the process's environment is also given to it. */
  readonly preload?: Record<string, string>;
}

/** Starts `src/main.ts` and resolves once it listens. */
export async function startServiceProcess(options: ServiceOptions = {}): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...(options.args ?? [])], {
    env: { PATH: process.env.PATH, PORT: '0', HOST: '127.0.0.1', ...options.preload, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // 'close' comes after the child's output is fully read; 'exit' can come before.
  const exit = new Promise<number | null>((resolve) => child.once('close', resolve));
  const port = await new Promise<number>((resolve, reject) => {
    let pending = '';
    child.stdout.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        const entry = JSON.parse(line) as Record<string, unknown>;
        logs.push(entry);
        if (typeof entry.port === 'number') resolve(entry.port);
      }
    });
    void exit.then((code) => {
      reject(new Error(`memgate exited with ${String(code)} before listening:\n${stderr}`));
    });
  });
  return {
    child,
    logs,
    stderr: () => stderr,
    exit,
    url: `http://127.0.0.1:${port}`,
    stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exit;
    },
  };
}
