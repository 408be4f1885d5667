import { randomBytes } from 'node:crypto';
import { createConnection } from 'node:net';
import { afterAll, beforeAll, inject } from 'vitest';
import {
  findMemcachedBinary,
  INSTALL_HINT,
  startMemcachedProcess,
  type MemcachedProcess,
} from '../../scripts/lib/memcached-process.js';

export { startMemcachedProcess, type MemcachedProcess };

/** A real Memcached for a test file. */
export interface TestMemcached {
  /** `host:port`, ready for createMemcachedStore or MEMCACHED_SERVERS. */
  readonly servers: string;
  /** Where it came from: `env`, `binary`, `testcontainers`, or `shared` (the run's). */
  readonly source: string;
  stop(): Promise<void>;
}

/**
 * A Memcached for the calling test file: the one the run shares (test/setup/shared-run.ts),
 * or with `own`, one started before its tests and stopped after them, for a test that reads
 * the server's statistics (others' work would show in them). Call the returned function
 * inside tests (or hooks) to reach it.
 */
export function useMemcached(options: { own?: boolean } = {}): () => TestMemcached {
  const shared = options.own === true ? undefined : inject('sharedMemcached');
  if (shared !== undefined) {
    const memcached: TestMemcached = { servers: shared, source: 'shared', stop: () => Promise.resolve() };
    return () => memcached;
  }
  let memcached: TestMemcached | undefined;
  beforeAll(async () => {
    memcached =
      options.own === true ? { ...(await startMemcachedProcess()), source: 'binary' } : await startMemcached();
  });
  afterAll(async () => {
    await memcached?.stop();
  });
  return () => {
    if (!memcached) throw new Error('useMemcached(): the Memcached is only there while the tests run');
    return memcached;
  };
}

/** MEMCACHED_SERVERS when set, else a memcached binary on a free port, else testcontainers. */
export async function startMemcached(): Promise<TestMemcached> {
  const fromEnv = process.env.MEMCACHED_SERVERS?.trim();
  if (fromEnv) return { servers: fromEnv, source: 'env', stop: () => Promise.resolve() };
  if (await findMemcachedBinary()) return { ...(await startMemcachedProcess()), source: 'binary' };
  const container = await startMemcachedContainer();
  if ('servers' in container) return container;
  throw new Error(`${INSTALL_HINT} (testcontainers: ${container.reason})`);
}

/** A key prefix no other test run uses, so tests can share one Memcached. */
export function uniquePrefix(): string {
  return `t${randomBytes(6).toString('hex')}`;
}

async function startMemcachedContainer(): Promise<TestMemcached | { reason: string }> {
  try {
    const { GenericContainer } = await import('testcontainers');
    const container = await new GenericContainer('memcached:1.6-alpine')
      .withExposedPorts(11211)
      .withStartupTimeout(60_000)
      .start();
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

/**
 * Counter writes the server has seen: increments and decrements, hits and misses, plus new
 * items (memcached counts an increment that creates its key only there, and also counts an
 * increment whose number outgrows its item). Zero exactly when nothing was written.
 */
export async function counterWrites(servers: string): Promise<number> {
  const s = await memcachedStats(servers);
  return (s.incr_hits ?? 0) + (s.incr_misses ?? 0) + (s.decr_hits ?? 0) + (s.decr_misses ?? 0) + (s.total_items ?? 0);
}

/**
 * Every item the server holds, but the clocks' own (`memgate:clock:<second>`, one a second
 * while a memgate instance runs): each counter key with its CAS unique, which every write to
 * it (a set, an increment, a decrement) changes. Equal before and after: nothing was written.
 */
export async function counterItems(servers: string): Promise<Map<string, string>> {
  const [host = '127.0.0.1', port = '11211'] = (servers.split(',')[0] ?? '').split(':');
  // `hash` walks the hash table, so every item is listed once; a crawl already running
  // (memcached's own LRU crawler) answers BUSY: asked again.
  const dump = () =>
    new Promise<string>((resolve, reject) => {
      let received = '';
      const socket = createConnection({ host, port: Number(port) }, () =>
        socket.write('lru_crawler metadump hash\r\n'),
      );
      socket.on('data', (chunk) => {
        received += chunk.toString('latin1');
        if (received.endsWith('END\r\n') || /^(BUSY|ERROR|CLIENT_ERROR)[^\n]*\r\n$/.test(received)) {
          socket.end();
          resolve(received);
        }
      });
      socket.once('error', reject);
    });
  let text = await dump();
  for (let tries = 0; text.startsWith('BUSY') && tries < 100; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    text = await dump();
  }
  if (!text.endsWith('END\r\n')) throw new Error(`memcached did not list its items: ${text.trim()}`);
  const items = new Map<string, string>();
  for (const [, key, cas] of text.matchAll(/^key=(\S+) .*\bcas=(\d+)/gm)) {
    const name = decodeURIComponent(key as string);
    if (!name.startsWith('memgate:clock:')) items.set(name, cas as string);
  }
  return items;
}

/** Every key the server was asked to read, hit or miss. */
export async function counterReads(servers: string): Promise<number> {
  const s = await memcachedStats(servers);
  return (s.get_hits ?? 0) + (s.get_misses ?? 0);
}
