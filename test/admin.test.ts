// /admin/reset and /admin/reload on a running service with a real memcached.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../src/config/defaults.js';
import { loadSettings } from '../src/config/settings.js';
import { createLimiter } from '../src/counting/limiter.js';
import { buildApp } from '../src/http/app.js';
import { startService } from '../src/service.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';

const TOKEN = 'admin-token-for-the-tests-0123456789';
const memcached = useMemcached();
const running: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((service) => service.close()));
});

async function policyFile(limit: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'memgate-admin-'));
  const path = join(dir, 'policies.yaml');
  await writeFile(path, `events:\n  login:\n    limits:\n      - { limit: ${limit}, window: 1h }\n`);
  return path;
}

/** A service on a free port; returns its URL, its log lines and the policy file it reads. */
async function start(env: Record<string, string>) {
  const path = await policyFile(2);
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const logger = pino({ level: 'info' }, sink);
  const settings = loadSettings(
    {
      PORT: '0',
      HOST: '127.0.0.1',
      MEMCACHED_SERVERS: memcached().servers,
      MEMGATE_KEY_PREFIX: uniquePrefix(),
      ...env,
    },
    ['--config', path],
  );
  const service = await startService(settings, logger);
  running.push(service);
  const { port } = service.app.server.address() as { port: number };
  const url = `http://127.0.0.1:${port}`;
  const admin = (route: string, body: object | undefined, token = TOKEN) =>
    fetch(`${url}${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
  const check = (feature: string) => fetch(`${url}/check?event=login&feature=${feature}`);
  return { url, lines, path, admin, check };
}

describe('admin routes', () => {
  it('do not exist without MEMGATE_ADMIN_TOKEN', async () => {
    const { admin } = await start({});
    expect((await admin('/admin/reset', { event: 'login', feature: 'x' })).status).toBe(404);
    expect((await admin('/admin/reload', undefined)).status).toBe(404);
  });

  it('refuse a missing or wrong token with 401, changing nothing, and never echo the token', async () => {
    const { admin, check, lines } = await start({ MEMGATE_ADMIN_TOKEN: TOKEN });
    await check('eve');
    await check('eve');
    for (const token of ['', 'wrong-token-of-some-length', `${TOKEN}x`]) {
      const response = await admin('/admin/reset', { event: 'login', feature: 'eve' }, token);
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      expect(await response.text()).not.toContain(TOKEN);
    }
    expect((await check('eve')).status).toBe(429);
    expect(lines.join('')).not.toContain(TOKEN);
  });

  it('reset a feature: its next check is allowed again, others keep their counts', async () => {
    const { admin, check } = await start({ MEMGATE_ADMIN_TOKEN: TOKEN, MEMGATE_MAX_DENIAL_CACHE_MS: '0' });
    for (const feature of ['eve', 'eve', 'bob', 'bob']) expect((await check(feature)).status).toBe(200);
    expect((await check('eve')).status).toBe(429);
    const reset = await admin('/admin/reset', { event: 'login', feature: 'eve' });
    expect(reset.status).toBe(200);
    expect(await reset.json()).toEqual({ reset: true, event: 'login' });
    expect((await check('eve')).status).toBe(200);
    expect((await check('bob')).status).toBe(429);
    expect((await admin('/admin/reset', { event: 'nope', feature: 'eve' })).status).toBe(400);
  });

  it('reload the policy file without a restart, and keep the old policies when the new file is bad, logging why and who asked', async () => {
    const { admin, check, path, lines } = await start({ MEMGATE_ADMIN_TOKEN: TOKEN });
    await writeFile(path, 'events:\n  login:\n    limits:\n      - { limit: 5, window: 1h }\n');
    const reloaded = await admin('/admin/reload', undefined);
    expect(await reloaded.json()).toEqual({ reloaded: true, source: path, events: ['login'] });
    expect((await check('carol')).headers.get('ratelimit-policy')).toBe('"login-1h";q=5;w=3600');

    await writeFile(path, 'events:\n  login:\n    limits:\n      - { limit: 0, window: 1y }\n');
    const refused = await admin('/admin/reload', undefined);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { code: 'invalid_policies' } });
    expect((await check('carol')).headers.get('ratelimit-policy')).toBe('"login-1h";q=5;w=3600');
    const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const problems = [
      'event "login", field limits[0].limit: must be >= 1 (got 0)',
      'event "login", field limits[0].window: must be a positive whole duration like 30s, 5m, 1h, 1d or a number of seconds (got "1y")',
    ];
    expect(logged.filter((line) => line.level === 40)).toEqual([
      expect.objectContaining({
        address: '127.0.0.1',
        source: path,
        problems,
        msg: `admin reload from 127.0.0.1 refused, the policies in use stay: ${path} is invalid: ${problems.join('; ')}`,
      }),
    ]);
    expect(
      logged.filter((line) => typeof line.msg === 'string' && line.msg.startsWith('admin reload from')),
    ).toHaveLength(2);
  });
});

describe('admin token guessing', () => {
  const LIMIT = DEFAULTS.adminFailureLimit;
  const WINDOW_MS = DEFAULTS.adminFailureWindowSeconds * 1000;

  /** An app whose counter store (Memcached) is down, with the failure count's clock in the test's hands. */
  function guessable(gateway?: object) {
    const clock = { ms: Date.parse('2026-01-01T00:00:00Z') };
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    // Nothing listens on port 1: the failure count must not need the counter store.
    const store = createMemcachedStore({ servers: '127.0.0.1:1', timeoutMs: 100 });
    const limiter = createLimiter({
      policies: { events: { login: { limits: [{ limit: 5, window: '1m' }] } }, ...(gateway ? { gateway } : {}) },
      store,
    });
    const app = buildApp({
      validateResponses: true,
      limiter,
      store,
      logger: pino({ level: 'info' }, sink),
      admin: {
        token: TOKEN,
        reload: () => Promise.resolve({ source: 'policies.yaml', events: ['login'] }),
        now: () => clock.ms,
      },
    });
    running.push({
      async close() {
        await app.close();
        await store.close();
      },
    });
    const reload = (remoteAddress: string, token: string, forwardedFor?: string) =>
      app.inject({
        method: 'POST',
        url: '/admin/reload',
        remoteAddress,
        headers: { authorization: `Bearer ${token}`, ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) },
      });
    return { clock, lines, reload };
  }

  it(`answers 401 to the first ${DEFAULTS.adminFailureLimit} wrong tokens from an address, then 429 to everything from it, the right token too`, async () => {
    const { reload } = guessable();
    for (let i = 0; i < LIMIT; i++) {
      const guess = await reload('203.0.113.9', `guess-number-${i}-of-the-token`);
      expect(guess.statusCode).toBe(401);
      expect(guess.json()).toMatchObject({ error: { code: 'unauthorized' } });
    }
    const locked = await reload('203.0.113.9', 'one-guess-too-many-of-the-token');
    expect(locked.statusCode).toBe(429);
    expect(locked.headers['retry-after']).toBe(String(DEFAULTS.adminFailureWindowSeconds));
    expect(locked.json()).toEqual({
      error: { code: 'too_many_failures', message: expect.stringContaining('retry in 60 s') as string },
    });
    const right = await reload('203.0.113.9', TOKEN);
    expect(right.statusCode).toBe(429);
    expect(right.body).not.toContain(TOKEN);
  });

  it('counts a direct sender by its own address, whatever X-Forwarded-For it writes, under a hop count of trusted proxies', async () => {
    const { reload } = guessable({ trustedProxies: 1, routes: [{ prefix: '/login', event: 'login' }] });
    for (let i = 0; i < LIMIT; i++) {
      expect((await reload('203.0.113.9', `guess-${i}-of-the-token-xxxx`, `198.51.100.${i + 1}`)).statusCode).toBe(401);
    }
    expect((await reload('203.0.113.9', TOKEN, '192.0.2.77')).statusCode).toBe(429);
  });

  it('counts the clients of a proxy the gateway lists by address, each apart', async () => {
    const { reload } = guessable({ trustedProxies: ['10.0.0.4'], routes: [{ prefix: '/login', event: 'login' }] });
    for (let i = 0; i < LIMIT; i++) {
      expect((await reload('10.0.0.4', `guess-${i}-of-the-token-xxxx`, '198.51.100.1')).statusCode).toBe(401);
    }
    expect((await reload('10.0.0.4', TOKEN, '198.51.100.1')).statusCode).toBe(429);
    // Another client behind the same proxy is not locked out by the first one's guesses.
    expect((await reload('10.0.0.4', TOKEN, '198.51.100.2')).statusCode).toBe(200);
  });

  it('leaves other addresses alone, does not forgive on success, and frees up once the failures leave the window', async () => {
    const { clock, reload } = guessable();
    for (let i = 0; i < LIMIT; i++) {
      expect((await reload('2001:db8::7', `wrong-token-guess-${i}-xxxxxxxx`)).statusCode).toBe(401);
      clock.ms += 1000;
    }
    expect((await reload('2001:db8::7', TOKEN)).statusCode).toBe(429);
    // Another address: its right token works, and its wrong ones are its own.
    expect((await reload('198.51.100.4', TOKEN)).json()).toEqual({
      reloaded: true,
      source: 'policies.yaml',
      events: ['login'],
    });
    expect((await reload('198.51.100.4', 'a-wrong-token-from-elsewhere')).statusCode).toBe(401);
    // The first failure leaves the window 60 s after it was made: the address may try once more.
    clock.ms += WINDOW_MS - LIMIT * 1000 - 1000;
    const stillLocked = await reload('2001:db8::7', TOKEN);
    expect(stillLocked.statusCode).toBe(429);
    expect(stillLocked.headers['retry-after']).toBe('1');
    clock.ms += 1000;
    expect((await reload('2001:db8::7', TOKEN)).statusCode).toBe(200);
    // A success does not reset the count: one more wrong token and it is locked again.
    expect((await reload('2001:db8::7', 'wrong-again-after-the-window')).statusCode).toBe(401);
    expect((await reload('2001:db8::7', TOKEN)).statusCode).toBe(429);
  });

  it('logs each failure once with the address and the count, and the switch to 429, never the token', async () => {
    const { lines, reload } = guessable();
    const guesses = Array.from({ length: LIMIT + 3 }, (_, i) => `${TOKEN.slice(0, -2)}${String(i).padStart(2, '0')}`);
    for (const guess of guesses) await reload('192.0.2.33', guess);
    await reload('192.0.2.33', TOKEN);
    const failures = lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('admin authentication failed'));
    expect(failures.map((l) => [l.level, l.address, l.failures])).toEqual(
      Array.from({ length: LIMIT }, (_, i) => [40, '192.0.2.33', i + 1]),
    );
    const switched = lines.filter((l) => typeof l.msg === 'string' && l.msg.includes('now get 429'));
    expect(switched).toEqual([expect.objectContaining({ level: 40, address: '192.0.2.33', failures: LIMIT })]);
    const logged = JSON.stringify(lines);
    for (const token of [TOKEN, ...guesses]) expect(logged).not.toContain(token);
  });
});
