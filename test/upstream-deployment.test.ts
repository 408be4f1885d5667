// An envoyproxy/ratelimit deployment switched to memgate unchanged: its environment (upstream's
// docker-compose for Memcached) and its runtime directory, memgate as `npm start` runs it on a
// real memcached, asked by a grpc-js client as Envoy asks; and what it refuses, at start.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { oneDescriptor, rlsClient } from '../scripts/lib/rls-client.js';
import { startServiceProcess } from './helpers/service-process.js';
import { awayFromWindowEnd } from './helpers/window.js';

const root = mkdtempSync(join(tmpdir(), 'memgate-runtime-'));
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

/** upstream's layout: RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/config/*.yaml. */
function runtimeDirectory(): string {
  const folder = join(root, 'ratelimit', 'config');
  mkdirSync(folder, { recursive: true });
  writeFileSync(
    join(folder, 'edge.yaml'),
    [
      'domain: edge',
      'descriptors:',
      '  - key: remote_address',
      '    rate_limit: { unit: minute, requests_per_unit: 2 }',
      '',
    ].join('\n'),
  );
  return root;
}

describe("an envoyproxy/ratelimit deployment's environment", () => {
  it('starts memgate, which reads its runtime directory and its Memcached and answers Envoy', async () => {
    const service = await startServiceProcess({
      USE_STATSD: 'false',
      LOG_LEVEL: 'info',
      BACKEND_TYPE: 'memcache',
      MEMCACHE_HOST_PORT: inject('sharedMemcached'),
      RUNTIME_ROOT: runtimeDirectory(),
      RUNTIME_SUBDIRECTORY: 'ratelimit',
      RUNTIME_WATCH_ROOT: 'false',
      GRPC_PORT: '0',
    });
    try {
      const started = service.logs.find((entry) => typeof entry.grpcPort === 'number');
      expect(started?.store).toBe('memcached');
      const client = rlsClient(`127.0.0.1:${String(started?.grpcPort)}`);
      try {
        const ask = async () =>
          (await client.shouldRateLimit(oneDescriptor('edge', ['remote_address', '192.0.2.7']))).overall_code;
        // A minute's fixed window: the three calls must fall in one.
        await awayFromWindowEnd(60);
        expect([await ask(), await ask(), await ask()]).toEqual(['OK', 'OK', 'OVER_LIMIT']);
        expect(await client.health('ratelimit')).toBe('SERVING');
      } finally {
        client.close();
      }
      const health = await fetch(`${service.url}/healthcheck`);
      expect([health.status, await health.text()]).toEqual([200, 'OK']);
      const read = service.logs.find((entry) => String(entry.msg).startsWith("read envoyproxy/ratelimit's settings"));
      expect(read?.msg).toBe(
        "read envoyproxy/ratelimit's settings: GRPC_PORT as MEMGATE_GRPC_PORT, RUNTIME_ROOT, RUNTIME_SUBDIRECTORY as MEMGATE_ENVOY_CONFIG, MEMCACHE_HOST_PORT as MEMCACHED_SERVERS",
      );
    } finally {
      await service.stop();
    }
  });

  it("refuses at start what it would do otherwise, naming memgate's equivalent, and starts nothing", () => {
    // upstream's own docker-compose.yml: Redis, its default backend, with a Memcached beside it.
    const run = spawnSync(process.execPath, ['dist/main.js'], {
      env: {
        PATH: process.env.PATH,
        PORT: '0',
        USE_STATSD: 'false',
        REDIS_SOCKET_TYPE: 'tcp',
        REDIS_URL: 'redis:6379',
        MEMCACHE_HOST_PORT: inject('sharedMemcached'),
        RUNTIME_ROOT: runtimeDirectory(),
        RUNTIME_SUBDIRECTORY: 'ratelimit',
        TRACING_ENABLED: 'true',
        TRACING_EXPORTER_PROTOCOL: 'zipkin',
      },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.status).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(
      'memgate: REDIS_SOCKET_TYPE, REDIS_URL: memgate has no Redis backend; it counts in Memcached (set BACKEND_TYPE=memcache and MEMCACHE_HOST_PORT, or MEMCACHED_SERVERS)',
    );
    expect(run.stderr).toContain('memgate: TRACING_EXPORTER_PROTOCOL=zipkin: upstream takes http or grpc');
  });
});
