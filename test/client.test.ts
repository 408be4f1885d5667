// memgate/client against a real memgate process, over a real memcached and over the
// embedded store: the decisions it answers, the requests that reach memgate, and what it
// answers when memgate cannot.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, request as httpRequest, type Server } from 'node:http';
import { createServer as createNetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, MemgateClientError, type ClientDecision, type MemgateClient } from '../src/client/index.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';
import { startServiceProcess, type ServiceProcess } from './helpers/service-process.js';

const TOKEN = 'client-test-admin-token-0123456789';
const POLICIES = `events:
  login:
    limits:
      - { limit: 3, window: 2s }
  wide:
    limits:
      - { limit: 1000000, window: 60s }
  hourly:
    limits:
      - { limit: 5, window: 1h }
  leased:
    limits:
      - { limit: 100, window: 1m }
    lease: { maxUnits: 20, life: 2s }
  tiered:
    limits:
      - { limit: 2, window: 1h }
    tiers:
      pro: { limits: [{ limit: 4, window: 1h }] }
  export:
    algorithm: concurrency
    limits:
      - { limit: 2, timeout: 1m }
`;
const memcached = useMemcached();

/**
 * An HTTP proxy in front of memgate that counts the requests it forwards, per path, and keeps
 * the last answer's body of each; `down` answers 503 itself.
 */
async function countingProxy(target: string) {
  const seen = new Map<string, number>();
  const answered = new Map<string, unknown>();
  const state = { down: false };
  const server = createHttpServer((request, response) => {
    const path = request.url ?? '';
    seen.set(path, (seen.get(path) ?? 0) + 1);
    if (state.down) {
      response.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
      response.end(JSON.stringify({ error: { code: 'overloaded', message: 'down for the test' } }));
      return;
    }
    const upstream = httpRequest(`${target}${path}`, { method: request.method, headers: request.headers }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        answered.set(path, text.startsWith('{') || text.startsWith('[') ? JSON.parse(text) : text);
      });
      answer.pipe(response);
    });
    request.pipe(upstream);
  });
  const url = await listen(server);
  return {
    url,
    state,
    /** Requests seen so far, per path. */
    seen: (path: string) => seen.get(path) ?? 0,
    /** The body memgate last answered on `path`. */
    lastAnswer: (path: string) => answered.get(path),
    close: () => closeServer(server),
  };
}

async function listen(server: Server | ReturnType<typeof createNetServer>): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return `http://127.0.0.1:${port}`;
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) =>
    server.close(() => {
      resolve();
    }),
  );
}

/** memgate's own count of the decisions of one event and route kind, every outcome, from /metrics. */
async function decisionsCounted(url: string, event: string, kind = 'check'): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let total = 0;
  for (const [, labels, value] of text.matchAll(/^memgate_decisions_total\{([^}]*)\} (\S+)$/gm)) {
    if (labels?.includes(`event="${event}"`) && labels.includes(`kind="${kind}"`)) total += Number(value);
  }
  return total;
}

async function postCheck(url: string, body: object, route = '/check'): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

function unique(name: string): string {
  return `${name}-${uniquePrefix()}`;
}

describe.each(['memcached', 'embedded'] as const)('memgate/client against memgate (%s store)', (store) => {
  let memgate: ServiceProcess;
  let proxy: Awaited<ReturnType<typeof countingProxy>>;
  const clients: MemgateClient[] = [];
  // Long enough that a busy host's slow answer is still memgate's: a decision made locally after
  // the default 500 ms is what the timeout tests below ask for, with silent servers of their own.
  const client = (options: Partial<Parameters<typeof createClient>[0]> = {}) => {
    const made = createClient({ url: proxy.url, adminToken: TOKEN, timeoutMs: 30_000, ...options });
    clients.push(made);
    return made;
  };

  beforeAll(async () => {
    const folder = mkdtempSync(join(tmpdir(), 'memgate-client-'));
    const policies = join(folder, 'policies.yaml');
    writeFileSync(policies, POLICIES);
    memgate = await startServiceProcess({
      MEMGATE_CONFIG: policies,
      MEMGATE_ADMIN_TOKEN: TOKEN,
      MEMGATE_KEY_PREFIX: uniquePrefix(),
      ...(store === 'memcached' ? { MEMCACHED_SERVERS: memcached().servers } : {}),
    });
    proxy = await countingProxy(memgate.url);
  });
  afterAll(async () => {
    // Settled, not all: a client that fails to close must not leave memgate running.
    const closed = await Promise.allSettled(clients.map((c) => c.close()));
    await proxy.close();
    expect(await memgate.stop()).toBe(0);
    expect(closed.filter((result) => result.status === 'rejected')).toEqual([]);
  });

  it('answers the decisions /check and /peek answer', async () => {
    const memgateClient = client();
    const viaClient = unique('a');
    const direct = unique('b');
    // What depends on the second a request lands in (resetSeconds, retryAfter) is compared with
    // memgate's answer to the same request; a client's and a direct request's, made a moment
    // apart, only by what they counted.
    const counted = (decision: unknown) => {
      const { allowed, limits } = decision as { allowed: boolean; limits: { remaining: number }[] };
      return { allowed, remaining: limits.map((limit) => limit.remaining) };
    };
    let lastDenial: ClientDecision | undefined;
    for (let i = 0; i < 7; i++) {
      const peeked = await memgateClient.peek('hourly', viaClient);
      expect(peeked).toEqual({ ...(proxy.lastAnswer('/peek') as object), source: 'server' });
      const peekedDirect = await postCheck(memgate.url, { event: 'hourly', feature: direct }, '/peek');
      expect(counted(peeked)).toEqual(counted(peekedDirect.body));
      const checked = await memgateClient.check('hourly', viaClient);
      const checkedDirect = await postCheck(memgate.url, { event: 'hourly', feature: direct });
      expect(checkedDirect.status).toBe(checked.allowed ? 200 : 429);
      expect(counted(checked)).toEqual(counted(checkedDirect.body));
      // The first denial comes from memgate; the next is repeated locally, never longer than memgate said.
      if (i < 6) expect(checked).toEqual({ ...(proxy.lastAnswer('/check') as object), source: 'server' });
      else {
        expect(checked.source).toBe('local');
        expect(checked.retryAfter).toBeLessThanOrEqual(lastDenial?.retryAfter ?? 0);
        expect(checked.retryAfter).toBeGreaterThanOrEqual((lastDenial?.retryAfter ?? 0) - 1);
      }
      if (!checked.allowed) lastDenial = checked;
    }
    const cost = await memgateClient.check('hourly', unique('c'), { cost: 4 });
    expect(cost.limits[0]?.remaining).toBe(1);
  });

  it("sends the tier a check names, and never answers one tier's check with another's denial", async () => {
    const memgateClient = client({ leaseUnits: 5 });
    const feature = unique('t');
    const plain = [];
    for (let i = 0; i < 3; i++) plain.push((await memgateClient.check('tiered', feature)).allowed);
    expect(plain).toEqual([true, true, false]);
    // Denied without a tier (and repeated locally); the same client as pro has 4, 2 counted.
    expect((await memgateClient.check('tiered', feature)).source).toBe('local');
    const pro = [];
    for (let i = 0; i < 3; i++) pro.push(await memgateClient.check('tiered', feature, { tier: 'pro' }));
    expect(pro.map((decision) => [decision.allowed, decision.source])).toEqual([
      [true, 'server'],
      [true, 'server'],
      [false, 'server'],
    ]);
    await expect(memgateClient.check('tiered', feature, { tier: 'gold' })).rejects.toMatchObject({
      code: 'unknown_tier',
    });
    await expect(memgateClient.check('tiered', feature, { tier: '' })).rejects.toMatchObject({ code: 'invalid_tier' });
  });

  it('coalesces concurrent checks into /check/batch requests of at most maxBatchSize', async () => {
    const memgateClient = client();
    const before = { batch: proxy.seen('/check/batch'), single: proxy.seen('/check') };
    const counted = await decisionsCounted(memgate.url, 'wide');
    const features = Array.from({ length: 250 }, (_, i) => unique(`w${i}`));
    const decisions = await Promise.all(features.map((f) => memgateClient.check('wide', f)));
    expect(decisions.every((d) => d.allowed && d.source === 'server' && d.limits[0]?.remaining === 999_999)).toBe(true);
    expect(proxy.seen('/check/batch') - before.batch).toBe(3);
    expect(proxy.seen('/check') - before.single).toBe(0);
    expect((await decisionsCounted(memgate.url, 'wide')) - counted).toBe(250);

    // One check alone, or maxBatchSize 1, goes to /check.
    const alone = client({ maxBatchSize: 1 });
    await Promise.all(Array.from({ length: 5 }, () => alone.check('wide', unique('one'))));
    expect(proxy.seen('/check') - before.single).toBe(5);
  });

  it('splits a batch whose features escape past memgate’s body limit, rather than have it refused', async () => {
    const memgateClient = client();
    // 100 features of 1,000 control characters: 6 bytes each in JSON, 600 KB together.
    const features = Array.from({ length: 100 }, (_, i) => `${unique(`c${i}`)}${'\u0001'.repeat(1000)}`);
    const decisions = await Promise.all(features.map((f) => memgateClient.check('wide', f)));
    expect(decisions.every((d) => d.allowed && d.source === 'server')).toBe(true);
  });

  it('decides each check of a batch on its own: an unknown event rejects alone, counting nothing', async () => {
    const memgateClient = client();
    const counted = await decisionsCounted(memgate.url, 'wide');
    const [good, bad, tooCostly] = await Promise.allSettled([
      memgateClient.check('wide', unique('g')),
      memgateClient.check('no_such_event', 'x'),
      memgateClient.check('hourly', unique('h'), { cost: 6 }),
    ]);
    expect(good).toMatchObject({ status: 'fulfilled', value: { allowed: true, source: 'server' } });
    expect(bad).toMatchObject({ status: 'rejected', reason: { code: 'unknown_event', status: 400 } });
    expect((bad as PromiseRejectedResult).reason).toBeInstanceOf(MemgateClientError);
    expect(tooCostly).toMatchObject({ status: 'rejected', reason: { code: 'cost_exceeds_limit', status: 400 } });
    expect((await decisionsCounted(memgate.url, 'wide')) - counted).toBe(1);
  });

  it('refuses input memgate would refuse before sending it', async () => {
    const memgateClient = client();
    const requests = memgateClient.stats.requests;
    await expect(memgateClient.check('hourly', '')).rejects.toMatchObject({
      code: 'invalid_feature',
      status: undefined,
    });
    await expect(memgateClient.check('', 'f')).rejects.toMatchObject({ code: 'invalid_event' });
    await expect(memgateClient.check('hourly', 'f', { cost: 0 })).rejects.toMatchObject({ code: 'invalid_cost' });
    await expect(memgateClient.check('hourly', 'f\uD800')).rejects.toMatchObject({ code: 'invalid_feature' });
    expect(memgateClient.stats.requests).toBe(requests);
  });

  it('sends at most one check per retryAfter period of a denied feature: 100,000 checks', async () => {
    const memgateClient = client();
    const feature = unique('denied');
    let first: ClientDecision;
    do first = await memgateClient.check('login', feature);
    while (first.allowed);
    const statsBefore = memgateClient.stats;
    const proxyBefore = proxy.seen('/check') + proxy.seen('/check/batch');
    const countedBefore = await decisionsCounted(memgate.url, 'login');

    // 100 rounds of 1,000 concurrent checks, spread over more than two retryAfter periods.
    const started = performance.now();
    const fromServer: { decision: ClientDecision; at: number }[] = [];
    let local = 0;
    for (let round = 0; round < 100; round++) {
      const at = performance.now();
      const decisions = await Promise.all(Array.from({ length: 1000 }, () => memgateClient.check('login', feature)));
      for (const decision of decisions) {
        if (decision.source === 'server') fromServer.push({ decision, at });
        else local++;
      }
      await sleep(40);
    }
    const elapsedMs = performance.now() - started;
    expect(elapsedMs).toBeGreaterThan(4000);

    const stats = memgateClient.stats;
    // The requests that reached memgate: the same number counted by the client, by a proxy
    // in front of memgate, and by memgate itself; every other check was answered locally.
    expect(stats.checksSent - statsBefore.checksSent).toBe(fromServer.length);
    expect(proxy.seen('/check') + proxy.seen('/check/batch') - proxyBefore).toBe(fromServer.length);
    expect((await decisionsCounted(memgate.url, 'login')) - countedBefore).toBe(fromServer.length);
    expect(stats.answeredLocally - statsBefore.answeredLocally).toBe(local);
    expect(local + fromServer.length).toBe(100_000);

    // The bound: a denial from memgate, then nothing more of this key until its retryAfter
    // has passed; what passes then is what the window freed (at most its limit, 3).
    const deniedFromServer = fromServer.filter(({ decision }) => !decision.allowed);
    const allowedFromServer = fromServer.filter(({ decision }) => decision.allowed);
    const periods = Math.ceil(elapsedMs / 1000 / (first.retryAfter ?? 1));
    expect(deniedFromServer.length).toBeLessThanOrEqual(periods + 1);
    expect(allowedFromServer.length).toBeLessThanOrEqual(3 * (Math.ceil(elapsedMs / 2000) + 1));
    for (let i = 1; i < deniedFromServer.length; i++) {
      const previous = deniedFromServer[i - 1] as (typeof deniedFromServer)[number];
      const gapMs = (deniedFromServer[i] as (typeof deniedFromServer)[number]).at - previous.at;
      // Rounds start after the previous one ended, so a gap is measured from before the
      // previous denial was sent; the next probe left at least retryAfter after it.
      expect(gapMs).toBeGreaterThanOrEqual((previous.decision.retryAfter ?? 0) * 1000 - 50);
    }
    expect(fromServer.length).toBeLessThan(20);
  }, 60_000);

  it('repeats a denial until its retryAfter with the time left, and asks memgate once it has passed', async () => {
    const memgateClient = client();
    const feature = unique('countdown');
    for (let i = 0; i < 3; i++) expect((await memgateClient.check('login', feature)).allowed).toBe(true);
    const denial = await memgateClient.check('login', feature);
    expect(denial).toMatchObject({ allowed: false, source: 'server' });
    const repeated = await memgateClient.check('login', feature);
    expect(repeated).toMatchObject({ allowed: false, source: 'local', retryAfter: denial.retryAfter });
    await sleep((denial.retryAfter ?? 0) * 1000 + 50);
    expect(await memgateClient.check('login', feature)).toMatchObject({ allowed: true, source: 'server' });
  });

  it('reset forgets the count at memgate and the local denial', async () => {
    const memgateClient = client();
    const feature = unique('reset');
    await memgateClient.check('hourly', feature, { cost: 5 });
    expect(await memgateClient.check('hourly', feature)).toMatchObject({ allowed: false, source: 'server' });
    expect(await memgateClient.reset('hourly', feature)).toEqual({ reset: true, event: 'hourly' });
    expect(await memgateClient.check('hourly', feature)).toMatchObject({ allowed: true, source: 'server' });
    await expect(createClient({ url: proxy.url }).reset('hourly', feature)).rejects.toMatchObject({
      code: 'admin_token_missing',
    });
    await expect(client({ adminToken: 'a-wrong-token-0123456789' }).reset('hourly', feature)).rejects.toMatchObject({
      code: 'unauthorized',
      status: 401,
    });
  });

  it('holds a slot of a concurrency limit per request in flight, and releases it', async () => {
    const memgateClient = client();
    const feature = unique('jobs');
    const [first, second] = await Promise.all([
      memgateClient.check('export', feature),
      memgateClient.check('export', feature),
    ]);
    expect([first.allowed, second.allowed]).toEqual([true, true]);
    expect((await memgateClient.peek('export', feature)).allowed).toBe(false);
    expect(await memgateClient.release('export', feature, first.slot?.id ?? '')).toEqual({ released: true });
    expect(await memgateClient.release('export', feature, first.slot?.id ?? '')).toEqual({ released: false });
    expect((await memgateClient.peek('export', feature)).limits[0]?.remaining).toBe(1);
    await expect(memgateClient.release('export', feature, 'nope')).rejects.toMatchObject({ code: 'unknown_slot' });
    await expect(memgateClient.release('login', feature, '1.x')).rejects.toMatchObject({ code: 'release_off' });
  });

  it('refund takes a counted cost back', async () => {
    const memgateClient = client();
    const feature = unique('refund');
    const at = Date.now();
    await memgateClient.check('hourly', feature, { cost: 5 });
    expect((await memgateClient.check('hourly', feature)).allowed).toBe(false);
    expect(await memgateClient.refund('hourly', feature, { cost: 2, at })).toEqual({ refunded: true, event: 'hourly' });
    expect(await memgateClient.check('hourly', feature)).toMatchObject({ allowed: true, source: 'server' });
  });

  it('answers by onError, degraded, while memgate answers 503, then probes once per errorBackoffMs', async () => {
    const memgateClient = client({ errorBackoffMs: 300 });
    const feature = unique('down');
    proxy.state.down = true;
    try {
      const requests = memgateClient.stats.requests;
      expect(await memgateClient.check('hourly', feature)).toEqual({
        allowed: true,
        limits: [],
        degraded: true,
        source: 'local',
      });
      const during = await Promise.all(Array.from({ length: 50 }, () => memgateClient.check('hourly', feature)));
      expect(during.every((d) => d.degraded && d.allowed)).toBe(true);
      expect(memgateClient.stats.requests - requests).toBe(1);
      await sleep(350);
      await memgateClient.check('hourly', feature);
      expect(memgateClient.stats.requests - requests).toBe(2);
    } finally {
      proxy.state.down = false;
    }
    await sleep(350);
    expect(await memgateClient.check('hourly', feature)).toMatchObject({ allowed: true, source: 'server' });
    expect(memgateClient.stats.degraded).toBe(52);
  });

  it('works over a plain fetch transport', async () => {
    const memgateClient = client({ fetch: globalThis.fetch });
    const decisions = await Promise.all([
      memgateClient.check('wide', unique('f1')),
      memgateClient.check('wide', unique('f2')),
    ]);
    expect(decisions.every((d) => d.allowed && d.source === 'server')).toBe(true);
    expect(memgateClient.stats).toMatchObject({ requests: 1, checksSent: 2 });
  });

  it('close waits for the checks under way; later calls reject', async () => {
    const memgateClient = createClient({ url: proxy.url });
    const pending = Array.from({ length: 10 }, () => memgateClient.check('wide', unique('close')));
    await memgateClient.close();
    const settled = await Promise.allSettled(pending);
    expect(settled.every((s) => s.status === 'fulfilled' && s.value.source === 'server')).toBe(true);
    await expect(memgateClient.check('wide', 'x')).rejects.toMatchObject({ code: 'client_closed' });
  });

  it("spends a lease's units locally, returns what is left when it ends, and never admits past the limit", async () => {
    const leaser = client({ leaseUnits: 10 });
    const other = client();
    const feature = unique('leased');
    const before = proxy.seen('/lease/batch');
    const answers: ClientDecision[] = [];
    for (let i = 0; i < 25; i++) answers.push(await leaser.check('leased', feature));
    expect(answers.every((a) => a.allowed)).toBe(true);
    // Three leases of 10 units: the first check of each asks memgate, the other 22 are answered here.
    // A spent lease goes back in the same request as the next one is taken.
    expect(leaser.stats.leasesTaken).toBe(3);
    expect(proxy.seen('/lease/batch') - before).toBe(3);
    expect(answers.filter((a) => a.source === 'local')).toHaveLength(22);
    expect(leaser.stats.answeredFromLeases).toBe(22);
    // Another caller sees 30 units counted, 5 of them not yet spent (the spent leases' return may still be on its way).
    await expect.poll(async () => (await other.peek('leased', feature)).limits[0]?.remaining).toBe(70);
    // The lease ends after 2 s (less the margin) and its 5 unused units come back.
    await expect.poll(() => proxy.seen('/lease/batch') - before, { timeout: 5000 }).toBe(4);
    await expect.poll(async () => (await other.peek('leased', feature)).limits[0]?.remaining).toBe(75);
    expect(leaser.stats.leaseReturnsLost).toBe(0);
  });

  it('takes at most what remains, and checks of an event without leases go to /check', async () => {
    const leaser = client({ leaseUnits: 50 });
    const feature = unique('leased');
    // 85 of 100 spent by others: the lease gets the 15 that remain (maxUnits is 20).
    expect((await postCheck(memgate.url, { event: 'leased', feature, cost: 85 })).status).toBe(200);
    const answers = [];
    for (let i = 0; i < 16; i++) answers.push((await leaser.check('leased', feature)).allowed);
    expect(answers.filter(Boolean)).toHaveLength(15);
    expect(answers[15]).toBe(false);
    const before = proxy.seen('/check');
    expect((await leaser.check('hourly', unique('h'))).allowed).toBe(true);
    expect((await leaser.check('hourly', unique('h'))).allowed).toBe(true);
    expect(proxy.seen('/check') - before).toBe(2);
    await leaser.close();
  });
});

describe('memgate/client when memgate cannot be reached', () => {
  let silent: ReturnType<typeof createNetServer>;
  let silentUrl: string;
  const sockets: Socket[] = [];
  let downUrl: string;

  beforeAll(async () => {
    // Accepts connections and never answers.
    silent = createNetServer((socket) => sockets.push(socket));
    silentUrl = await listen(silent);
    const closed = createNetServer();
    downUrl = await listen(closed);
    await new Promise((resolve) => closed.close(resolve));
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  it('answers degraded within timeoutMs when memgate stays silent', async () => {
    const memgateClient = createClient({ url: silentUrl, timeoutMs: 200 });
    const started = performance.now();
    const decision = await memgateClient.check('login', 'x');
    const took = performance.now() - started;
    expect(decision).toEqual({ allowed: true, limits: [], degraded: true, source: 'local' });
    expect(took).toBeGreaterThanOrEqual(195);
    expect(took).toBeLessThan(450);
    await memgateClient.close();
  });

  it('with onError deny, denies for one second and repeats that denial locally', async () => {
    const memgateClient = createClient({ url: silentUrl, timeoutMs: 100, onError: 'deny', errorBackoffMs: 0 });
    expect(await memgateClient.check('login', 'x')).toEqual({
      allowed: false,
      limits: [],
      retryAfter: 1,
      degraded: true,
      source: 'local',
    });
    const requests = memgateClient.stats.requests;
    expect(await memgateClient.check('login', 'x')).toMatchObject({ allowed: false, degraded: true, source: 'local' });
    expect(memgateClient.stats.requests).toBe(requests);
    // Another feature is not denied by it: it asks (and times out) on its own.
    await memgateClient.check('login', 'y');
    expect(memgateClient.stats.requests).toBe(requests + 1);
    await memgateClient.close();
  });

  it('answers degraded when nothing listens, and asks again only after errorBackoffMs', async () => {
    const memgateClient = createClient({ url: downUrl, errorBackoffMs: 400 });
    expect(await memgateClient.check('login', 'x')).toMatchObject({ allowed: true, degraded: true });
    const during = await Promise.all(Array.from({ length: 100 }, (_, i) => memgateClient.check('login', `f${i}`)));
    expect(during.every((d) => d.degraded && d.source === 'local')).toBe(true);
    expect(memgateClient.stats).toMatchObject({ requests: 1, checksSent: 1, answeredLocally: 101, degraded: 101 });
    await sleep(450);
    await memgateClient.check('login', 'x');
    expect(memgateClient.stats.requests).toBe(2);
    await memgateClient.close();
  });
});
