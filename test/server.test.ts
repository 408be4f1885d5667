import { spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMemcachedProcess, type MemcachedProcess } from './helpers/memcached.js';
import { startServiceProcess as startService } from './helpers/service-process.js';

/** For tests about something else than the drain (test/shutdown.test.ts): stop at once. */
const NO_DRAIN = { MEMGATE_SHUTDOWN_DRAIN_MS: '0' };

/** Runs the service expecting it to refuse to start. */
async function failedStart(env: Record<string, string>, args: string[] = []): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
    env: { PATH: process.env.PATH, PORT: '0', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stderr };
}

describe('the memgate process', () => {
  let memcached: MemcachedProcess;
  beforeAll(async () => {
    memcached = await startMemcachedProcess();
  });
  afterAll(async () => {
    await memcached.stop();
  });

  it('starts on the embedded store without MEMCACHED_SERVERS, says so, and stops cleanly on SIGTERM', async () => {
    const service = await startService(NO_DRAIN);
    expect(service.logs.some((l) => typeof l.msg === 'string' && l.msg.includes('with the embedded store'))).toBe(true);
    const response = await fetch(`${service.url}/check?event=login&feature=203.0.113.7`);
    expect(response.status).toBe(200);
    expect(response.headers.get('ratelimit')).toMatch(/^"login-1m";r=4;t=\d+$/);
    expect(await fetch(`${service.url}/readyz`).then((r) => r.json())).toEqual({ status: 'ready', store: 'embedded', clockOffsetMs: 0, servers: [{ server: 'embedded', up: true }] });
    service.child.kill('SIGTERM');
    expect(await service.exit).toBe(0);
    expect(service.logs.at(-1)?.msg).toBe('stopped');
  });

  it('uses Memcached when MEMCACHED_SERVERS is set', async () => {
    const service = await startService({ ...NO_DRAIN, MEMCACHED_SERVERS: memcached.servers });
    expect(service.logs.some((l) => l.store === `memcached ${memcached.servers}`)).toBe(true);
    expect(await fetch(`${service.url}/readyz`).then((r) => r.json())).toEqual({
      status: 'ready',
      store: 'memcached',
      clockOffsetMs: expect.any(Number) as number,
      servers: [{ server: memcached.servers, up: true, evictions: 0, clockOffsetMs: expect.any(Number) as number }],
    });
    service.child.kill('SIGTERM');
    expect(await service.exit).toBe(0);
  });

  it('decides checks by the onStoreError rule while Memcached is down, and logs that once, not per check', async () => {
    const service = await startService({ ...NO_DRAIN, MEMCACHED_SERVERS: '127.0.0.1:1' });
    const answers = await Promise.all(Array.from({ length: 5 }, () => fetch(`${service.url}/check?event=url_shorten&feature=x`).then((r) => r.json())));
    expect(answers).toEqual(answers.map(() => ({ allowed: true, limits: [], degraded: true })));
    const outage = service.logs.filter((l) => typeof l.msg === 'string' && l.msg.includes('checks are decided by'));
    expect(outage).toHaveLength(1);
    service.child.kill('SIGTERM');
    expect(await service.exit).toBe(0);
  });

  it('finishes a request in flight after the listener has closed', async () => {
    const service = await startService({ ...NO_DRAIN, MEMCACHED_SERVERS: memcached.servers, MEMCACHED_TIMEOUT_MS: '5000' });
    await fetch(`${service.url}/readyz`);
    memcached.process.kill('SIGSTOP');
    const inFlight = fetch(`${service.url}/check?event=login&feature=draining`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    service.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 200));
    memcached.process.kill('SIGCONT');
    expect((await inFlight).status).toBe(200);
    expect(await service.exit).toBe(0);
  });

  it('exits at once, with 1, on a second signal while draining', async () => {
    const service = await startService({ MEMCACHED_SERVERS: memcached.servers, MEMCACHED_TIMEOUT_MS: '5000' });
    await fetch(`${service.url}/readyz`);
    memcached.process.kill('SIGSTOP');
    const inFlight = fetch(`${service.url}/check?event=login&feature=impatient`).catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 200));
    service.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 200));
    service.child.kill('SIGTERM');
    expect(await service.exit).toBe(1);
    memcached.process.kill('SIGCONT');
    await inFlight;
    expect(service.logs.at(-1)?.msg).toBe('second signal while draining; exiting now');
  });

  it('skips the drain period on SIGINT (Ctrl-C), and still stops cleanly', async () => {
    const service = await startService({ MEMGATE_SHUTDOWN_DRAIN_MS: '60000' });
    const signalled = Date.now();
    service.child.kill('SIGINT');
    expect(await service.exit).toBe(0);
    expect(Date.now() - signalled).toBeLessThan(5000);
    expect(service.logs.find((l) => l.signal === 'SIGINT')).toMatchObject({ drainMs: 0, msg: 'stopping without a drain: the listener closes now' });
    expect(service.logs.at(-1)?.msg).toBe('stopped');
  });

  it('refuses a bad policy file, naming the file, the event and the field', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'memgate-'));
    const path = join(dir, 'policies.yaml');
    await writeFile(path, 'events:\n  login:\n    limits:\n      - { limit: 0, window: 1m }\n');
    const viaEnv = await failedStart({ MEMGATE_CONFIG: path });
    expect(viaEnv.code).toBe(1);
    expect(viaEnv.stderr).toContain(`invalid policies in ${path}`);
    expect(viaEnv.stderr).toContain('event "login", field limits[0].limit: must be >= 1');
    const viaFlag = await failedStart({}, ['--config', path]);
    expect(viaFlag.code).toBe(1);
    expect(viaFlag.stderr).toContain(path);
  });

  it.each([
    [{ PORT: 'eighty' }, 'PORT must be a whole number'],
    [{ MEMCACHED_TIMEOUT_MS: '0' }, 'MEMCACHED_TIMEOUT_MS must be a whole number from 1'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL must be one of'],
    [{ MEMCACHED_SERVERS: 'host:port:extra' }, 'MEMCACHED_SERVERS entry "host:port:extra" has port'],
    [{ MEMGATE_KEY_PREFIX: 'has space' }, 'key prefix'],
    [{ MEMGATE_SHUTDOWN_DRAIN_MS: '5s' }, 'MEMGATE_SHUTDOWN_DRAIN_MS must be a whole number from 0'],
  ])('refuses the setting %j with a clear message', async (env, message) => {
    const { code, stderr } = await failedStart(env);
    expect(code).not.toBe(0);
    expect(stderr).toContain(message);
  });
});
