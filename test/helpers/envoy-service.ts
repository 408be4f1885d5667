// memgate started as main.ts starts it, serving Envoy's rate limit service on a free gRPC port,
// counting in the test file's Memcached; each test's services and clients close after it.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { afterEach } from 'vitest';
import { loadSettings } from '../../src/config/settings.js';
import { startService, type RunningService } from '../../src/service.js';
import { rlsClient, type RlsClient } from '../../scripts/lib/rls-client.js';
import { uniquePrefix, type TestMemcached } from './memcached.js';

/** A pino logger at info whose lines (one JSON line each) are kept in `lines`, as a service's tests read them. */
export function capturedLogger(): { lines: string[]; logger: Logger } {
  const lines: string[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  );
  return { lines, logger };
}

/** An Envoy configuration file with `text`, in a folder of its own. */
export async function envoyConfigFile(text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'memgate-envoy-'));
  const path = join(dir, 'ratelimit.yaml');
  await writeFile(path, text);
  return path;
}

export interface EnvoyService {
  readonly service: RunningService;
  readonly client: RlsClient;
  /** The gRPC server's `host:port`. */
  readonly address: string;
  /** The HTTP API's base URL. */
  readonly url: string;
  /** What it logged, one JSON line each. */
  readonly lines: string[];
}

export interface EnvoyServiceOptions {
  /** The Envoy configuration file (see envoyConfigFile); the caller's default otherwise. */
  readonly config?: string;
  /** Shared by instances that count together; a fresh one otherwise. */
  readonly prefix?: string;
  readonly env?: Record<string, string>;
}

/**
 * One service on `memcached`, with the Envoy configuration file `options.config`. The caller
 * closes it (`service.close()`, `client.close()`); useEnvoyServices closes each test's for it.
 */
export async function startEnvoyService(
  memcached: TestMemcached,
  options: EnvoyServiceOptions & { readonly config: string },
): Promise<EnvoyService> {
  const { lines, logger } = capturedLogger();
  const settings = loadSettings(
    {
      PORT: '0',
      HOST: '127.0.0.1',
      MEMGATE_GRPC_PORT: '0',
      MEMGATE_ENVOY_CONFIG: options.config,
      MEMCACHED_SERVERS: memcached.servers,
      MEMGATE_KEY_PREFIX: options.prefix ?? uniquePrefix(),
      MEMGATE_USAGE_DB: 'off',
      ...options.env,
    },
    [],
  );
  const service = await startService(settings, logger);
  const grpcPort = service.grpc?.port;
  if (grpcPort === undefined) {
    await service.close();
    throw new Error('the gRPC server did not start');
  }
  const address = `127.0.0.1:${grpcPort}`;
  const { port } = service.app.server.address() as { port: number };
  return { service, client: rlsClient(address), address, url: `http://127.0.0.1:${port}`, lines };
}

/**
 * For a test file: a function starting services on `memcached` with `defaultConfig` unless a
 * test names another, closed after each test.
 */
export function useEnvoyServices(
  memcached: () => TestMemcached,
  defaultConfig: string,
): (options?: EnvoyServiceOptions) => Promise<EnvoyService> {
  const started: EnvoyService[] = [];
  afterEach(async () => {
    const closing = started.splice(0);
    for (const { client } of closing) client.close();
    await Promise.all(closing.map(({ service }) => service.close()));
  });
  return async (options = {}) => {
    const config = options.config ?? (await envoyConfigFile(defaultConfig));
    const one = await startEnvoyService(memcached(), { ...options, config });
    started.push(one);
    return one;
  };
}
