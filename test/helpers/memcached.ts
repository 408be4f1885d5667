import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { access, constants } from 'node:fs/promises';
import { createConnection, createServer } from 'node:net';
import { userInfo } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';

/** A real Memcached for a test file. */
export interface TestMemcached {
  /** `host:port`, ready for createMemcachedStore or MEMCACHED_SERVERS. */
  readonly servers: string;
  /** Where it came from: `env`, `binary` or `testcontainers`. */
  readonly source: string;
  stop(): Promise<void>;
}

/**
 * A Memcached for the calling test file, started before its tests and stopped after them.
 * Call the returned function inside tests (or hooks) to reach it.
 */
export function useMemcached(): () => TestMemcached {
  let memcached: TestMemcached | undefined;
  beforeAll(async () => {
    memcached = await startMemcached();
  });
  afterAll(async () => {
    await memcached?.stop();
  });
  return () => {
    if (!memcached) throw new Error('useMemcached(): the Memcached is only there while the tests run');
    return memcached;
  };
}

/** A memcached process this test controls, for fault tests (pause, kill). */
export interface MemcachedProcess extends TestMemcached {
  readonly process: ChildProcess;
  readonly port: number;
}

const INSTALL_HINT =
  'tests need a real Memcached: set MEMCACHED_SERVERS=host:port, or install memcached (apt-get install -y memcached), or run a Docker engine for testcontainers';

/** MEMCACHED_SERVERS when set, else a memcached binary on a free port, else testcontainers. */
export async function startMemcached(): Promise<TestMemcached> {
  const fromEnv = process.env.MEMCACHED_SERVERS?.trim();
  if (fromEnv) return { servers: fromEnv, source: 'env', stop: () => Promise.resolve() };
  if (await findMemcachedBinary()) return startMemcachedProcess();
  const container = await startMemcachedContainer();
  if ('servers' in container) return container;
  throw new Error(`${INSTALL_HINT} (testcontainers: ${container.reason})`);
}

/** Starts the memcached binary on a free loopback port and waits until it accepts connections. */
export async function startMemcachedProcess(): Promise<MemcachedProcess> {
  const binary = await findMemcachedBinary();
  if (!binary) throw new Error(INSTALL_HINT);
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    // memcached refuses to run as root unless told which user to be.
    const user = process.getuid?.() === 0 ? ['-u', userInfo().username] : [];
    const child = spawn(binary, ['-l', '127.0.0.1', '-p', String(port), '-U', '0', '-m', '64', ...user], { stdio: 'ignore' });
    const exited = new Promise<void>((resolve) => {
      child.once('exit', () => {
        resolve();
      });
    });
    if (await acceptsConnections(port, exited)) {
      return {
        servers: `127.0.0.1:${port}`,
        source: 'binary',
        process: child,
        port,
        async stop() {
          if (child.exitCode === null && child.signalCode === null) {
            child.kill('SIGCONT'); // in case a test paused it
            child.kill('SIGKILL');
            await exited;
          }
        },
      };
    }
    child.kill('SIGKILL');
    // Another process took the port between our probe and memcached's bind: try a new one.
    if (attempt === 3) throw new Error(`memcached (${binary}) did not start on a free port after 3 attempts`);
  }
}

/** A key prefix no other test run uses, so tests can share one Memcached. */
export function uniquePrefix(): string {
  return `t${randomBytes(6).toString('hex')}`;
}

async function findMemcachedBinary(): Promise<string | undefined> {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/usr/sbin', '/usr/local/bin'];
  for (const dir of dirs.filter(Boolean)) {
    const candidate = join(dir, 'memcached');
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

async function startMemcachedContainer(): Promise<TestMemcached | { reason: string }> {
  try {
    const { GenericContainer } = await import('testcontainers');
    const container = await new GenericContainer('memcached:1.6-alpine').withExposedPorts(11211).withStartupTimeout(60_000).start();
    return {
      servers: `${container.getHost()}:${container.getMappedPort(11211)}`,
      source: 'testcontainers',
      async stop() {
        await container.stop();
      },
    };
  } catch (error) {
    // No Docker engine answers (only a client is installed, or none at all).
    return { reason: error instanceof Error ? error.message : String(error) };
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (typeof address === 'object' && address !== null) resolve(address.port);
        else reject(new Error('no port assigned'));
      });
    });
  });
}

async function acceptsConnections(port: number, exited: Promise<void>): Promise<boolean> {
  const state = { gone: false };
  void exited.then(() => {
    state.gone = true;
  });
  const deadline = Date.now() + 5000;
  while (!state.gone && Date.now() < deadline) {
    const connected = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ port, host: '127.0.0.1' }, () => {
        socket.end();
        resolve(true);
      });
      socket.once('error', () => {
        resolve(false);
      });
    });
    if (connected) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

/** The server's `stats` counters, read over the text protocol. */
export async function memcachedStats(servers: string): Promise<Record<string, number>> {
  const [host = '127.0.0.1', port = '11211'] = (servers.split(',')[0] ?? '').split(':');
  const text = await new Promise<string>((resolve, reject) => {
    let received = '';
    const socket = createConnection({ host, port: Number(port) }, () => socket.write('stats\r\n'));
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (received.endsWith('END\r\n')) {
        socket.end();
        resolve(received);
      }
    });
    socket.once('error', reject);
  });
  const stats: Record<string, number> = {};
  for (const [, name, value] of text.matchAll(/^STAT (\S+) (\S+)\r$/gm)) stats[name as string] = Number(value);
  return stats;
}

/** Every counter write the server has seen: increments and decrements, hits and misses. */
export async function counterWrites(servers: string): Promise<number> {
  const s = await memcachedStats(servers);
  return (s.incr_hits ?? 0) + (s.incr_misses ?? 0) + (s.decr_hits ?? 0) + (s.decr_misses ?? 0);
}
