// The processes a benchmark runs and measures: a bench case's server (scripts/bench/server.ts)
// or the memgate service itself, each on a free loopback port.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { freePort } from '../lib/memcached-process.js';
import { BUILD_ENV } from './compiled.js';

export interface Measured {
  readonly url: URL;
  /** The process serving (with the memgate service: its start-up line's pid). */
  readonly pid: number;
  /** The memgate service's launcher (src/main.ts), when it runs as its child. */
  readonly launcherPid?: number;
  stop(): Promise<void>;
}

/** User and system CPU a process has used so far, in microseconds, from /proc (Linux). */
export async function cpuMicros(pid: number): Promise<{ user: number; system: number }> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces), counting from 3: utime is 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticksPerSecond = 100;
  return { user: (Number(fields[11]) * 1e6) / ticksPerSecond, system: (Number(fields[12]) * 1e6) / ticksPerSecond };
}

function stopper(child: ChildProcess): () => Promise<void> {
  return () =>
    new Promise((done) => {
      if (child.exitCode !== null || child.signalCode !== null) {
        done();
        return;
      }
      child.removeAllListeners('exit');
      child.once('exit', () => {
        done();
      });
      child.kill('SIGTERM');
    });
}

/**
 * A bench case's server (see server.ts); it prints {"port": N} once it listens. With `root`,
 * its memgate is another commit's build (baseline.ts).
 */
export function startCase(name: string, servers: string, options: { root?: string } = {}): Promise<Measured> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/bench/server.ts', name, servers], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: options.root === undefined ? process.env : { ...process.env, [BUILD_ENV]: options.root },
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      reject(new Error(`bench server ${name} exited with ${String(code)}`));
    });
    child.stdout.once('data', (chunk: Buffer) => {
      const { port } = JSON.parse(chunk.toString()) as { port: number };
      resolve({ url: new URL(`http://127.0.0.1:${port}`), pid: child.pid ?? 0, stop: stopper(child) });
    });
  });
}

/**
 * The memgate service as `npm start` runs it (dist/main.js: the bench builds it first; under
 * `root`, another commit's build),
 * with `env` on top of a free port; resolves once it logs that it listens. Its usage history
 * goes to a file of its own in a temporary folder unless `env` names one: one process
 * writes a file, and the checkout's ./data stays clean.
 */
export function startService(env: Record<string, string>, options: { root?: string } = {}): Promise<Measured> {
  const usageFolder = mkdtempSync(join(tmpdir(), 'memgate-bench-'));
  // Another build (baseline.ts) runs from its own folder, where its proto/ and dashboard/ are.
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: options.root,
    env: {
      PATH: process.env.PATH,
      PORT: '0',
      HOST: '127.0.0.1',
      MEMGATE_SHUTDOWN_DRAIN_MS: '0',
      MEMGATE_USAGE_DB: join(usageFolder, 'usage.db'),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  child.once('exit', () => {
    rmSync(usageFolder, { recursive: true, force: true });
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      reject(new Error(`memgate exited with ${String(code)} before listening`));
    });
    createInterface({ input: child.stdout }).on('line', (line) => {
      const entry = JSON.parse(line) as { port?: unknown; pid?: unknown };
      // The pid of the process serving: dist/main.js launches it as a child (src/main.ts).
      if (typeof entry.port === 'number') {
        const pid = Number(entry.pid ?? child.pid);
        resolve({
          url: new URL(`http://127.0.0.1:${entry.port}`),
          pid,
          ...(pid === child.pid || child.pid === undefined ? {} : { launcherPid: child.pid }),
          stop: stopper(child),
        });
      }
    });
  });
}

/**
 * The memgate service with Envoy's gRPC service too: `policies` and `envoy` are the policy
 * file and MEMGATE_ENVOY_CONFIG, the gRPC port a free one, named by `grpcAddress`.
 */
export async function startGrpcService(options: {
  servers: string;
  policies: string;
  envoy: string;
  keyPrefix: string;
}): Promise<Measured & { readonly grpcAddress: string }> {
  const grpcPort = await freePort();
  const service = await startService({
    MEMCACHED_SERVERS: options.servers,
    MEMGATE_CONFIG: options.policies,
    MEMGATE_ENVOY_CONFIG: options.envoy,
    MEMGATE_GRPC_PORT: String(grpcPort),
    MEMGATE_KEY_PREFIX: options.keyPrefix,
  });
  return { ...service, grpcAddress: `127.0.0.1:${grpcPort}` };
}
