// /admin/reset and /admin/reload on a running service with a real memcached.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSettings } from '../src/config/settings.js';
import { startService, type RunningService } from '../src/service.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';

const TOKEN = 'admin-token-for-the-tests-0123456789';
const memcached = useMemcached();
const running: RunningService[] = [];
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
  const settings = loadSettings({ PORT: '0', HOST: '127.0.0.1', MEMCACHED_SERVERS: memcached().servers, MEMGATE_KEY_PREFIX: uniquePrefix(), ...env }, ['--config', path]);
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

  it('reload the policy file without a restart, and keep the old policies when the new file is bad', async () => {
    const { admin, check, path } = await start({ MEMGATE_ADMIN_TOKEN: TOKEN });
    await writeFile(path, 'events:\n  login:\n    limits:\n      - { limit: 5, window: 1h }\n');
    const reloaded = await admin('/admin/reload', undefined);
    expect(await reloaded.json()).toEqual({ reloaded: true, source: path, events: ['login'] });
    expect((await check('carol')).headers.get('ratelimit-policy')).toBe('"login-1h";q=5;w=3600');

    await writeFile(path, 'events:\n  login:\n    limits:\n      - { limit: 0, window: 1w }\n');
    const refused = await admin('/admin/reload', undefined);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ error: { code: 'invalid_policies' } });
    expect((await check('carol')).headers.get('ratelimit-policy')).toBe('"login-1h";q=5;w=3600');
  });
});
