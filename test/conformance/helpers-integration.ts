// For test/conformance/upstream-integration.test.ts: memgate started from envoyproxy/ratelimit's
// environment (in this process, as main.ts starts it, or as `node dist/main.js` for a start
// that must fail), upstream's runtime directory, a statsd server, Memcached's item TTLs and the
// TLS material upstream's integration tests make for themselves.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterEach } from 'vitest';
import {
  RateLimitClient,
  rlsClient,
  type RlsClient,
  type WireRequestIn,
  type WireResponseOut,
} from '../../scripts/lib/rls-client.js';
import { loadSettings } from '../../src/config/settings.js';
import { startService, type RunningService } from '../../src/service.js';
import { capturedLogger } from '../helpers/envoy-service.js';
import { uniquePrefix } from '../helpers/memcached.js';

/** Upstream's runtime layout: RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY/*.yaml. */
export interface Runtime {
  /** RUNTIME_ROOT (upstream's integration tests use `runtime/current`). */
  readonly root: string;
  /** RUNTIME_ROOT/ratelimit: files here are not loaded (upstream keeps reload.yaml here). */
  readonly subdirectory: string;
  /** RUNTIME_ROOT/ratelimit/config: the loaded files. */
  readonly config: string;
  /** RUNTIME_ROOT, RUNTIME_SUBDIRECTORY and RUNTIME_APPDIRECTORY, as upstream's defaultSettings() sets them. */
  readonly env: Readonly<Record<string, string>>;
}

/** A runtime directory of its own with `config` in ratelimit/config and `beside` in ratelimit/. */
export function upstreamRuntime(config: Record<string, string>, beside: Record<string, string> = {}): Runtime {
  const root = join(mkdtempSync(join(tmpdir(), 'memgate-upstream-runtime-')), 'runtime', 'current');
  const subdirectory = join(root, 'ratelimit');
  const configFolder = join(subdirectory, 'config');
  mkdirSync(configFolder, { recursive: true });
  for (const [name, text] of Object.entries(config)) writeFileSync(join(configFolder, name), text);
  for (const [name, text] of Object.entries(beside)) writeFileSync(join(subdirectory, name), text);
  return {
    root,
    subdirectory,
    config: configFolder,
    env: { RUNTIME_ROOT: root, RUNTIME_SUBDIRECTORY: 'ratelimit', RUNTIME_APPDIRECTORY: 'config' },
  };
}

export interface UpstreamService {
  readonly service: RunningService;
  /** A plain-text client (none when the gRPC server speaks TLS: make one with tlsClient). */
  readonly client: RlsClient;
  /** `127.0.0.1:<grpc port>`. */
  readonly address: string;
  readonly url: string;
  /** What it logged, one JSON line each. */
  readonly lines: string[];
  /** The value of the Prometheus sample `name{labels}` at /metrics, 0 when absent. */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
}

/**
 * A function starting memgate from upstream's variables `env` (plus USE_STATSD=false,
 * BACKEND_TYPE=memcache and GRPC_PORT=0 unless `env` says otherwise, and memgate's own PORT,
 * HOST and usage history off), closed after each test. Its keys get a prefix of their own
 * unless `env` has CACHE_KEY_PREFIX. A start memgate refuses throws its reason.
 */
export function useUpstreamServices(): (env: Record<string, string>) => Promise<UpstreamService> {
  const started: UpstreamService[] = [];
  afterEach(async (context) => {
    const closing = started.splice(0);
    // A failed test shows what its services warned of (a Memcached server thought down moves its counts).
    if (context.task.result?.state === 'fail')
      for (const { lines } of closing)
        for (const line of lines) if (/"level":(40|50|60)/.test(line)) process.stderr.write(line);
    for (const { client } of closing) client.close();
    await Promise.all(closing.map(({ service }) => service.close()));
  });
  return async (env) => {
    const { lines, logger } = capturedLogger();
    const settings = loadSettings(
      {
        PORT: '0',
        HOST: '127.0.0.1',
        MEMGATE_USAGE_DB: 'off',
        MEMGATE_KEY_PREFIX: env.CACHE_KEY_PREFIX === undefined ? uniquePrefix() : '',
        USE_STATSD: 'false',
        BACKEND_TYPE: 'memcache',
        GRPC_PORT: '0',
        ...env,
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
    const url = `http://127.0.0.1:${port}`;
    const one: UpstreamService = {
      service,
      client: rlsClient(address),
      address,
      url,
      lines,
      metric: async (name, labels = {}) => metricValue(await (await fetch(`${url}/metrics`)).text(), name, labels),
    };
    started.push(one);
    return one;
  };
}

/** The value of the sample `name` whose labels include `labels`, 0 when there is none. */
export function metricValue(text: string, name: string, labels: Record<string, string>): number {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match?.[1] !== name) continue;
    const has = Object.entries(labels).every(([key, value]) => (match[2] ?? '').includes(`${key}="${value}"`));
    if (has) return Number(match[3]);
  }
  return 0;
}

/** What `node dist/main.js` did with `env` (plus PORT=0 on 127.0.0.1): a start that must fail. */
export function startRefused(env: Record<string, string>): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, ['dist/main.js'], {
    env: { PATH: process.env.PATH, PORT: '0', HOST: '127.0.0.1', MEMGATE_USAGE_DB: 'off', ...env },
    encoding: 'utf8',
    timeout: 15_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** A statsd server over TCP, as upstream's gostats sink sends (`name:value|c` lines). */
export interface StatsdServer {
  readonly port: number;
  /** The sum of the counter `name`'s flushes so far. */
  counter(name: string): number;
  /** Every counter received so far, each with the sum of its flushes. */
  counters(): ReadonlyMap<string, number>;
  close(): Promise<void>;
}

export async function startStatsd(): Promise<StatsdServer> {
  const counters = new Map<string, number>();
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    let pending = '';
    socket.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        const match = /^(.+):(\d+(?:\.\d+)?)\|c(?:\|.*)?$/.exec(line.trim());
        if (match) counters.set(match[1] as string, (counters.get(match[1] as string) ?? 0) + Number(match[2]));
      }
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    counter: (name) => counters.get(name) ?? 0,
    counters: () => counters,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        for (const socket of sockets) socket.destroy();
      }),
  };
}

/**
 * A function starting a statsd server (startStatsd), closed after each test. Call it before
 * useUpstreamServices: hooks after a test run last-registered first, so the services are closed
 * (their last counts sent) before their statsd is.
 */
export function useStatsd(): () => Promise<StatsdServer> {
  const started: StatsdServer[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((statsd) => statsd.close()));
  });
  return async () => {
    const statsd = await startStatsd();
    started.push(statsd);
    return statsd;
  };
}

/** Seconds each item whose key starts with `prefix` has left to live (Infinity: no expiry), by Memcached's clock. */
export async function itemTtls(servers: string, prefix: string): Promise<Map<string, number>> {
  const ask = (command: string, end: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const [host = '127.0.0.1', port = '11211'] = (servers.split(',')[0] ?? '').split(':');
      let received = '';
      const socket = createConnection({ host, port: Number(port) }, () => socket.write(`${command}\r\n`));
      socket.on('data', (chunk) => {
        received += chunk.toString('latin1');
        if (end.test(received)) {
          socket.end();
          resolve(received);
        }
      });
      socket.once('error', reject);
    });
  const stats = await ask('stats', /END\r\n$/);
  const now = Number(/^STAT time (\d+)\r$/m.exec(stats)?.[1]);
  let dump = await ask('lru_crawler metadump all', /(END|BUSY[^\n]*|ERROR[^\n]*)\r\n$/);
  for (let tries = 0; dump.startsWith('BUSY') && tries < 100; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    dump = await ask('lru_crawler metadump all', /(END|BUSY[^\n]*|ERROR[^\n]*)\r\n$/);
  }
  const ttls = new Map<string, number>();
  for (const [, key, exp] of dump.matchAll(/^key=(\S+) exp=(-?\d+)/gm)) {
    const name = decodeURIComponent(key as string);
    if (name.startsWith(prefix)) ttls.set(name, Number(exp) === -1 ? Infinity : Number(exp) - now);
  }
  return ttls;
}

/** The certificate files upstream's mTLSSetup makes: a CA, and a leaf for `localhost` it signed. */
export interface TlsMaterial {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

/**
 * A CA and a leaf certificate for `localhost` and 127.0.0.1 signed by it, for a server
 * (`serverAuth`) or a client (`clientAuth`), written in `folder` under `name` (made with openssl).
 */
export function makeTlsMaterial(folder: string, name: string, use: 'serverAuth' | 'clientAuth'): TlsMaterial {
  const file = (suffix: string) => join(folder, `${name}-${suffix}`);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl(
    'req',
    '-x509',
    '-new',
    ...ec,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
    '-days',
    '2',
    '-subj',
    `/O=${name} CA`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,digitalSignature',
  );
  openssl('req', '-new', ...ec, '-keyout', file('key.pem'), '-out', file('csr.pem'), '-subj', `/O=${name}`);
  writeFileSync(
    file('ext.cnf'),
    `subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=${use}\nkeyUsage=critical,digitalSignature\nbasicConstraints=CA:FALSE\n`,
  );
  openssl(
    'x509',
    '-req',
    '-in',
    file('csr.pem'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-out',
    file('cert.pem'),
    '-days',
    '2',
    '-extfile',
    file('ext.cnf'),
  );
  return { ca: file('ca.pem'), cert: file('cert.pem'), key: file('key.pem') };
}

/** A ShouldRateLimit call over TLS: trusting `ca`, with a client certificate when given. */
export function tlsCall(
  address: string,
  ca: Buffer,
  request: WireRequestIn,
  client?: { key: Buffer; cert: Buffer },
): Promise<WireResponseOut> {
  const stub = new RateLimitClient(address, grpc.credentials.createSsl(ca, client?.key ?? null, client?.cert ?? null), {
    'grpc.ssl_target_name_override': 'localhost',
  });
  return new Promise<WireResponseOut>((resolve, reject) => {
    stub.waitForReady(Date.now() + 3_000, (notReady) => {
      if (notReady) {
        stub.close();
        reject(notReady);
        return;
      }
      (
        stub as unknown as Record<string, (r: object, cb: (e: grpc.ServiceError | null, v: unknown) => void) => void>
      ).ShouldRateLimit?.call(stub, request, (error, reply) => {
        stub.close();
        if (error) reject(error);
        else resolve(reply as WireResponseOut);
      });
    });
  });
}

/** Whether a TLS handshake with the server at 127.0.0.1:`port` succeeds when trusting `ca` only. */
export function tlsHandshake(port: number, ca: Buffer): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca, servername: 'localhost', ALPNProtocols: ['h2'] });
    socket.once('secureConnect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      socket.destroy();
      resolve(false);
    });
  });
}
