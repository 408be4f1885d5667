import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { availableParallelism, getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { DEFAULTS } from '../src/config/defaults.js';
import { USAGE } from '../src/config/settings.js';
import { VERSION } from '../src/config/version.js';
import { startMemcachedProcess, type MemcachedProcess } from './helpers/memcached.js';
import { loggedFiles, moduleLog, packagesOf } from './helpers/module-log.js';
import { startServiceProcess as startService } from './helpers/service-process.js';

/** Runs the service expecting it to end by itself (refusing to start, or --help). */
async function run(
  env: Record<string, string>,
  args: string[] = [],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['dist/main.js', ...args], {
    // No usage history: these runs end by themselves, and would leave a ./data in the checkout.
    env: { PATH: process.env.PATH, PORT: '0', MEMGATE_USAGE_DB: 'off', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  return { code, stdout, stderr };
}
const failedStart = run;

/** A policy file with one event of each onStoreError rule. */
async function policiesWithBothRules(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'memgate-'));
  const path = join(dir, 'policies.yaml');
  await writeFile(
    path,
    'events:\n  login:\n    onStoreError: deny\n    limits: [{ limit: 5, window: 1m }]\n  search:\n    limits: [{ limit: 5, window: 1m }]\n',
  );
  return path;
}

const messages = (logs: Record<string, unknown>[], level: number) =>
  logs.filter((l) => l.level === level).map((l) => String(l.msg));

describe('the memgate process', () => {
  let memcached: MemcachedProcess;
  beforeAll(async () => {
    memcached = await startMemcachedProcess();
  });
  afterAll(async () => {
    await memcached.stop();
  });

  it('starts on the embedded store without MEMCACHED_SERVERS, in one line and one warning, and stops cleanly on SIGTERM', async () => {
    const service = await startService({});
    // Everything a person needs in the one start-up line; the warning separate, after it.
    await expect.poll(() => service.logs.length).toBe(2);
    expect(service.logs[0]).toMatchObject({
      level: 30,
      version: VERSION,
      host: '127.0.0.1',
      port: service.port,
      store: 'embedded',
      policies: expect.stringMatching(/config\/policies\.yaml$/) as string,
      events: ['login', 'url_shorten', 'export'],
      grpcPort: null,
      envoy: null,
      gateway: false,
      admin: false,
      cacheMb: 256,
      heapLimitMb: expect.any(Number) as number,
    });
    expect(service.logs[0]?.msg).toMatch(
      new RegExp(
        `^memgate ${VERSION} listening on 127\\.0\\.0\\.1:${service.port}, gRPC off; store: embedded; policies: .*config/policies\\.yaml \\(login, url_shorten, export\\); cache 256 MiB, heap limit \\d+ MiB; admin routes off; usage history: written to sqlite .*usage\\.db, read from sqlite; tracing: off$`,
      ),
    );
    expect(messages(service.logs, 40)).toEqual([
      'MEMCACHED_SERVERS is not set: counters live in this process only, so limits are not shared between instances',
    ]);
    const response = await fetch(`${service.url}/check?event=login&feature=203.0.113.7`);
    expect(response.status).toBe(200);
    expect(response.headers.get('ratelimit')).toMatch(/^"login-1m";r=4;t=\d+$/);
    expect(await fetch(`${service.url}/readyz`).then((r) => r.json())).toEqual({
      status: 'ready',
      store: 'embedded',
      // The policies in use: the same on every instance that runs the same files.
      policyVersion: expect.stringMatching(/^[0-9a-f]{12}$/) as string,
      clockOffsetMs: 0,
      servers: [{ server: 'embedded', up: true }],
    });
    service.child.kill('SIGTERM');
    expect(await service.exit).toBe(0);
    expect(service.logs.at(-1)?.msg).toBe('stopped');
  });

  it('uses Memcached when MEMCACHED_SERVERS is set, saying so in its one start-up line', async () => {
    const service = await startService({ MEMCACHED_SERVERS: memcached.servers });
    expect(service.logs).toEqual([
      expect.objectContaining({ level: 30, store: 'memcached', servers: [memcached.servers], memcachedTimeoutMs: 250 }),
    ]);
    expect(service.logs[0]?.msg).toContain(`; store: memcached ${memcached.servers} (timeout 250 ms); `);
    expect(await fetch(`${service.url}/readyz`).then((r) => r.json())).toEqual({
      status: 'ready',
      store: 'memcached',
      policyVersion: expect.stringMatching(/^[0-9a-f]{12}$/) as string,
      clockOffsetMs: expect.any(Number) as number,
      servers: [
        { server: memcached.servers, up: true, evictions: 0, clockOffsetMs: expect.any(Number) as number, state: 'up' },
      ],
    });
    service.child.kill('SIGTERM');
    expect(await service.exit).toBe(0);
  });

  it('serves as the child of a launcher that gives it a heap limit from the budget, and stops when the launcher is killed', async () => {
    // Memcached that never answers: the limit leaves out the embedded store's room.
    const service = await startService({ MEMGATE_CACHE_MB: '32', MEMCACHED_SERVERS: '127.0.0.1:1' });
    expect(service.servicePid).not.toBe(service.child.pid);
    expect(service.logs[0]).toMatchObject({ heapLimitFrom: 'budget', pid: service.servicePid });
    // Old space: the budget plus DEFAULTS.heapBeyondCacheMb (and V8's young generation beside it).
    const cmdline = await readFile(`/proc/${service.servicePid}/cmdline`, 'utf8');
    expect(cmdline.split('\0')).toContain(`--max-old-space-size=${32 + DEFAULTS.heapBeyondCacheMb}`);
    // V8's helper threads no more than the cores: more only take turns with the serving thread.
    expect(cmdline.split('\0')).toContain(`--v8-pool-size=${Math.min(4, availableParallelism())}`);
    expect(service.logs[0]?.heapLimitMb).toBeLessThan(32 + DEFAULTS.heapBeyondCacheMb + 64);
    // Its serving thread keeps its priority; the threads it runs at start, V8's helpers among
    // them, are lowered below it (a thread started later by libuv keeps the serving thread's).
    const threads = await readdir(`/proc/${service.servicePid}/task`);
    const priorities = threads.map((thread) => [Number(thread), getPriority(Number(thread))] as const);
    const lowered = Math.min(19, getPriority() + DEFAULTS.v8HelperNiceBy);
    expect(priorities.filter(([thread]) => thread === service.servicePid)).toEqual([
      [service.servicePid, getPriority()],
    ]);
    expect(priorities.filter(([, priority]) => priority === lowered).length).toBeGreaterThanOrEqual(
      Math.min(4, availableParallelism()),
    );
    service.child.kill('SIGKILL');
    // Nobody would stop it any more: it notices, and stops by itself.
    await expect
      .poll(
        () =>
          readFile(`/proc/${service.servicePid}/status`, 'utf8').then(
            () => 'running',
            () => 'gone',
          ),
        {
          timeout: 5000,
        },
      )
      .toBe('gone');
  });

  it('warns at start when the heap limit leaves the caches no room', async () => {
    const service = await startService({
      NODE_OPTIONS: '--max-old-space-size=300',
      MEMGATE_CACHE_MB: '256',
    });
    await expect.poll(() => service.logs.length).toBe(3);
    const heapLimitMb = service.logs[0]?.heapLimitMb as number;
    expect(heapLimitMb).toBeLessThan(256 + 128);
    expect(messages(service.logs, 40)).toContain(
      `the heap limit (${heapLimitMb} MiB) is below MEMGATE_CACHE_MB (256) plus the 128 MiB the rest of memgate needs: once the caches fill, the process runs out of memory. Raise --max-old-space-size or lower MEMGATE_CACHE_MB`,
    );
    service.child.kill('SIGTERM');
    expect(await service.exit).toBe(0);
  });

  it('starts while Memcached cannot be reached, warns once saying what checks get, and that is what they get', async () => {
    const service = await startService({
      MEMCACHED_SERVERS: '127.0.0.1:1',
      MEMGATE_CONFIG: await policiesWithBothRules(),
    });
    await expect.poll(() => service.logs.length).toBe(2);
    expect(messages(service.logs, 30)).toHaveLength(1);
    expect(messages(service.logs, 40)).toEqual([
      'Memcached 127.0.0.1:1 (connect ECONNREFUSED 127.0.0.1:1) cannot be reached: memgate serves anyway; until it answers, /readyz answers 503 and checks of the clients it holds are decided without the store: search is allowed, marked "degraded" (onStoreError: allow); login is denied with 429 and retry-after: 1 (onStoreError: deny)',
    ]);
    const logged = service.logs.length;
    const ask = (event: string) => fetch(`${service.url}/check?event=${event}&feature=x`);
    for (let i = 0; i < 5; i++) {
      const allowed = await ask('search');
      expect([allowed.status, await allowed.json()]).toEqual([
        200,
        { allowed: true, limits: [], degraded: true, policyVersion: expect.any(String) as string },
      ]);
      const denied = await ask('login');
      expect([denied.status, denied.headers.get('retry-after'), await denied.json()]).toEqual([
        429,
        '1',
        { allowed: false, limits: [], retryAfter: 1, degraded: true, policyVersion: expect.any(String) as string },
      ]);
    }
    expect((await fetch(`${service.url}/readyz`)).status).toBe(503);
    // Each problem once: no line per check.
    expect(service.logs).toHaveLength(logged);
    service.child.kill('SIGTERM');
    expect(await service.exit).toBe(0);
  });

  it('says once when a server goes down while serving and once when it answers again', async () => {
    const own = await startMemcachedProcess();
    try {
      const service = await startService({ MEMCACHED_SERVERS: own.servers, MEMCACHED_TIMEOUT_MS: '200' });
      await fetch(`${service.url}/check?event=url_shorten&feature=x`);
      await own.pause();
      const stalled = await Promise.all(
        Array.from({ length: 10 }, () =>
          fetch(`${service.url}/check?event=url_shorten&feature=x`).then((r) => r.json()),
        ),
      );
      expect(stalled).toContainEqual({
        allowed: true,
        limits: [],
        degraded: true,
        policyVersion: expect.any(String) as string,
      });
      own.process.kill('SIGCONT');
      await expect
        .poll(() => messages(service.logs, 30).some((m) => m.includes('answers again')), { timeout: 5000 })
        .toBe(true);
      expect(messages(service.logs, 40)).toEqual([
        expect.stringMatching(
          new RegExp(
            `^Memcached ${own.servers} is down \\(did not answer within 200 ms\\): until it answers, /readyz answers 503 and checks`,
          ),
        ) as string,
      ]);
      expect(messages(service.logs, 30).filter((m) => m.includes('answers again'))).toEqual([
        expect.stringMatching(/checks were decided without the store meanwhile$/) as string,
      ]);
      service.child.kill('SIGTERM');
      expect(await service.exit).toBe(0);
    } finally {
      own.process.kill('SIGCONT');
      await own.stop();
    }
  });

  it('finishes a request in flight after the listener has closed', async () => {
    const service = await startService({
      MEMCACHED_SERVERS: memcached.servers,
      MEMCACHED_TIMEOUT_MS: '5000',
    });
    await fetch(`${service.url}/readyz`);
    await memcached.pause();
    const inFlight = fetch(`${service.url}/check?event=login&feature=draining`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    service.child.kill('SIGTERM');
    // Past the listener's close and its first sweep of idle connections: the answer, begun
    // before the drain, keeps its connection alive, which must still be closed once idle.
    await new Promise((resolve) => setTimeout(resolve, 600));
    memcached.process.kill('SIGCONT');
    expect((await inFlight).status).toBe(200);
    expect(await service.exit).toBe(0);
  });

  it('exits at once, with 1, on a second signal while draining', async () => {
    const service = await startService({ MEMCACHED_SERVERS: memcached.servers, MEMCACHED_TIMEOUT_MS: '5000' });
    await fetch(`${service.url}/readyz`);
    await memcached.pause();
    const inFlight = fetch(`${service.url}/check?event=login&feature=impatient`).catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 200));
    service.child.kill('SIGTERM');
    // Later than the same stop arriving twice (DEFAULTS.repeatedSignalMs).
    await new Promise((resolve) => setTimeout(resolve, DEFAULTS.repeatedSignalMs + 200));
    service.child.kill('SIGTERM');
    expect(await service.exit).toBe(1);
    memcached.process.kill('SIGCONT');
    await inFlight;
    expect(service.logs.at(-1)?.msg).toBe('second signal while draining; exiting now');
  });

  it('drains once when one stop reaches it twice at once, as systemd signals every process of a unit', async () => {
    const service = await startService({ MEMGATE_SHUTDOWN_DRAIN_MS: '300' });
    expect(service.servicePid).not.toBe(service.child.pid);
    // The launcher hands its SIGTERM on, and the service gets one of its own a moment later
    // (at the same instant the kernel would merge the two into one).
    service.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 50));
    process.kill(service.servicePid, 'SIGTERM');
    expect(await service.exit).toBe(0);
    expect(service.logs.filter((line) => line.signal === 'SIGTERM')).toHaveLength(1);
    expect(service.logs.at(-1)?.msg).toBe('stopped');
  });

  it("stops once, cleanly, on a terminal's Ctrl-C, which reaches the launcher and the service both", async () => {
    const service = await startService({ MEMGATE_SHUTDOWN_DRAIN_MS: '60000' }, [], { ownGroup: true });
    const launcherPid = service.child.pid as number;
    // One session and group for both: the kernel shares the CPU between sessions first, and
    // a session of the service's own got it a small share on a busy machine.
    const [launcher, serving] = await Promise.all([processIds(launcherPid), processIds(service.servicePid)]);
    expect(serving).toEqual({ group: launcher.group, session: launcher.session });
    // The terminal signals the foreground group; the launcher hands its own on as well.
    process.kill(-launcherPid, 'SIGINT');
    expect(await service.exit).toBe(0);
    expect(service.logs.filter((line) => line.signal === 'SIGINT')).toHaveLength(1);
    expect(service.logs.some((line) => line.msg === 'second signal while draining; exiting now')).toBe(false);
    expect(service.logs.at(-1)?.msg).toBe('stopped');
  });

  it.for(['SIGINT'] as const)('skips the drain period on %s (Ctrl-C), and still stops cleanly', async (signal) => {
    const service = await startService({ MEMGATE_SHUTDOWN_DRAIN_MS: '60000' });
    const signalled = Date.now();
    service.child.kill(signal);
    expect(await service.exit).toBe(0);
    expect(Date.now() - signalled).toBeLessThan(5000);
    expect(service.logs.find((l) => l.signal === signal)).toMatchObject({
      drainMs: 0,
      msg: 'stopping without a drain: the listener closes now',
    });
    expect(service.logs.at(-1)?.msg).toBe('stopped');
  });

  it('refuses a bad policy file as bad configuration (exit 2), naming the file, the event and the field of every problem', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'memgate-'));
    const path = join(dir, 'policies.yaml');
    await writeFile(path, 'events:\n  login:\n    limits:\n      - { limit: 0, window: 1y }\n');
    const viaEnv = await failedStart({ MEMGATE_CONFIG: path });
    expect(viaEnv.code).toBe(2);
    expect(viaEnv.stderr).toBe(
      `memgate: invalid policies in ${path}:\n` +
        '  - event "login", field limits[0].limit: must be >= 1 (got 0)\n' +
        '  - event "login", field limits[0].window: must be a positive whole duration like 30s, 5m, 1h, 1d or a number of seconds (got "1y")\n',
    );
    const viaFlag = await failedStart({}, ['--config', path]);
    expect(viaFlag.code).toBe(2);
    expect(viaFlag.stderr).toContain(path);
    const missing = await failedStart({ MEMGATE_CONFIG: join(dir, 'none.yaml') });
    expect([missing.code, missing.stderr]).toEqual([2, expect.stringContaining('cannot read the file') as string]);
  });

  it.concurrent.for<[Record<string, string>, string]>([
    [{ PORT: 'eighty' }, 'PORT must be a whole number from 0 to 65535 (got "eighty")'],
    [{ MEMCACHED_TIMEOUT_MS: '0' }, 'MEMCACHED_TIMEOUT_MS must be a whole number from 1 to 60000 ms (got "0")'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "loud")'],
    [
      { MEMGATE_CAHCE_MB: '16' },
      'MEMGATE_CAHCE_MB is not a memgate setting: did you mean MEMGATE_CACHE_MB? (memgate --help lists every setting)',
    ],
    [
      { MEMCACHE_SERVERS: 'cache:11211' },
      'MEMCACHE_SERVERS is not a memgate setting: did you mean MEMCACHED_SERVERS? (memgate --help lists every setting)',
    ],
    [
      { MEMGATE_PORT: '9000' },
      'MEMGATE_PORT is not a memgate setting: did you mean PORT? (a Kubernetes service link would hold tcp://…) (memgate --help lists every setting)',
    ],
    [
      { MEMCACHED_SERVERS: '' },
      'MEMCACHED_SERVERS is set but empty: name the servers (host:port,…), or unset it to count in this process only',
    ],
    [
      { MEMCACHED_SERVERS: 'garbage' },
      'MEMCACHED_SERVERS entry "garbage" names no port: write host:port, as garbage:11211 (Memcached\'s usual port)',
    ],
    [
      { MEMCACHED_SERVERS: 'cache:99999' },
      'MEMCACHED_SERVERS entry "cache:99999" has port "99999": a port is a whole number from 1 to 65535',
    ],
    [
      { MEMCACHED_SERVERS: 'host:port:extra' },
      'MEMCACHED_SERVERS entry "host:port:extra" has port "port:extra": a port is a whole number from 1 to 65535',
    ],
    [
      { MEMGATE_KEY_PREFIX: 'has space' },
      'MEMGATE_KEY_PREFIX must be 1 to 32 letters, digits, "_", "." or "-" (got "has space")',
    ],
    [
      { MEMGATE_SHUTDOWN_DRAIN_MS: '5s' },
      'MEMGATE_SHUTDOWN_DRAIN_MS must be a whole number from 0 to 600000 ms (got "5s")',
    ],
  ])('refuses the setting %j as bad configuration (exit 2), in one line', async ([env, message], { expect }) => {
    expect(await failedStart(env)).toEqual({ code: 2, stdout: '', stderr: `memgate: ${message}\n` });
  });

  it('refuses a bad command line with exit 2 in one line, and answers --help with exit 0', async () => {
    expect(await run({}, ['--confg', 'x.yaml'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "memgate: Unknown option '--confg' (memgate --help lists the options)\n",
    });
    expect(await run({}, ['--help'])).toEqual({ code: 0, stdout: `${USAGE}\n`, stderr: '' });
    expect(await run({}, ['serve', '--help'])).toEqual({ code: 0, stdout: `${USAGE}\n`, stderr: '' });
    expect(await run({}, ['--version'])).toEqual({ code: 0, stdout: `memgate ${VERSION}\n`, stderr: '' });
  });

  it("is the memgate command: its --help names the operator's tools, and each runs from dist/", async () => {
    expect(USAGE).toMatch(/^ {7}memgate policies FILE /m);
    expect(USAGE).toMatch(/^ {7}memgate usage --event EVENT /m);
    const checked = await run({}, ['policies', 'config/policies.yaml']);
    expect(checked.code).toBe(0);
    expect(checked.stdout).toContain('login');
    // The usage tool asks a running memgate: none answers on this port, and it says so, exit 1.
    const asked = await run({}, ['usage', '--event', 'login', '--url', 'http://127.0.0.1:1']);
    expect({ code: asked.code, stdout: asked.stdout }).toEqual({ code: 1, stdout: '' });
    expect(asked.stderr).toMatch(/^usage: .*127\.0\.0\.1:1/);
  });

  it('exits 1 when it cannot start for another reason, in one line; the stack only with LOG_LEVEL=debug', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as { port: number };
    try {
      const env = { PORT: String(port), HOST: '127.0.0.1' };
      expect(await run(env)).toEqual({
        code: 1,
        stdout: '',
        stderr: `memgate: cannot listen on 127.0.0.1:${port}: address already in use (EADDRINUSE)\n`,
      });
      const debug = await run({ ...env, LOG_LEVEL: 'debug' });
      expect(debug.code).toBe(1);
      expect(debug.stderr).toMatch(/^memgate: Error: cannot listen on .*\n\s+at /);
    } finally {
      taken.close();
    }
  });

  // Every start pays for what it loads: the gRPC service's modules and undici (graphite-web's
  // client) took about 105 ms of each, configured or not; TypeBox, to build the routes'
  // schemas, about 120 ms of CPU (they are generated ahead of time: src/shared/contract-schemas.ts).
  it('loads the gRPC service and undici only when configured, and TypeBox never', async () => {
    const modules = await moduleLog();
    onTestFinished(() => modules.remove());
    /** What the service imported by the time it listened. */
    const loaded = async (name: string, env: Record<string, string>) => {
      const log = await modules.log(name);
      const service = await startService({
        ...env,
        ...log.env,
        // A heap limit of node's own: the service serves without a launcher, one process through the hook.
        NODE_OPTIONS: `--max-old-space-size=256 --import ${modules.register}`,
      });
      expect(await service.stop()).toBe(0);
      const files = await loggedFiles(log.path);
      return { packages: packagesOf(files), grpcModules: files.filter((file) => file.includes('/dist/grpc/')) };
    };
    // Every import goes through the hook's thread, slow on a loaded machine: both services at once.
    const [plain, grpc] = await Promise.all([loaded('plain', {}), loaded('grpc', { MEMGATE_GRPC_PORT: '0' })]);
    // The hook sees what is imported: the HTTP server's framework is.
    expect(plain.packages.has('fastify')).toBe(true);
    expect(plain.grpcModules).toEqual([]);
    expect(plain.packages.has('@grpc/proto-loader')).toBe(false);
    expect(plain.packages.has('undici')).toBe(false);
    expect(grpc.grpcModules).not.toEqual([]);
    expect(grpc.packages.has('@grpc/proto-loader')).toBe(true);
    for (const { packages } of [plain, grpc]) expect(packages.has('typebox')).toBe(false);
  }, 60_000);

  describe("the Docker image's HEALTHCHECK", () => {
    /** The HEALTHCHECK's command, run here with `env`; `preload` is imported first. */
    async function healthcheck(
      env: Record<string, string>,
      preload?: string,
    ): Promise<{ code: number | null; stdout: string }> {
      const dockerfile = await readFile(new URL('../Dockerfile', import.meta.url), 'utf8');
      const command = /^HEALTHCHECK .* CMD (\[.*\])$/m.exec(dockerfile)?.[1];
      expect(command, 'a HEALTHCHECK with an exec-form CMD').toBeDefined();
      const [binary, ...args] = JSON.parse(command ?? '[]') as string[];
      expect(binary).toBe('node');
      const child = spawn(process.execPath, [...(preload ? ['--import', preload] : []), ...args], {
        env: { PATH: process.env.PATH, ...env },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      return { code: await new Promise<number | null>((resolve) => child.once('close', resolve)), stdout };
    }

    it('asks /healthz on $PORT: healthy while Memcached is unreachable (/readyz is 503), unhealthy when nothing listens', async () => {
      const service = await startService({ MEMCACHED_SERVERS: '127.0.0.1:1' });
      expect((await fetch(`${service.url}/readyz`)).status).toBe(503);
      expect((await healthcheck({ PORT: String(service.port) })).code).toBe(0);
      service.child.kill('SIGTERM');
      expect(await service.exit).toBe(0);
      expect((await healthcheck({ PORT: String(service.port) })).code).toBe(1);
    });

    it('asks the default port when PORT is unset', async () => {
      // Stands in for fetch, printing the URL the check asks.
      const stub = 'data:text/javascript,globalThis.fetch=async(url)=>{console.log(String(url));process.exit(0)}';
      expect(await healthcheck({}, stub)).toEqual({ code: 0, stdout: `http://127.0.0.1:${DEFAULTS.port}/healthz\n` });
    });
  });
});

/** A process's group and session, from /proc (Linux). */
async function processIds(pid: number): Promise<{ group: number; session: number }> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // After the command name (which may hold spaces): state, parent, group, session.
  const [, , group, session] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { group: Number(group), session: Number(session) };
}
