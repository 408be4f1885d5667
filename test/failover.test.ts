// Memcached failover (issue 28) with real parts: three memcached processes, two memgate
// processes, clients checking all the while. One node is killed: its clients are counted
// on the others within a second, admitted at most one more window's limit; it starts
// again: they move back after the settle time, again at most one more limit.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../src/config/defaults.js';
import { createLimiter } from '../src/counting/limiter.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { Placement } from '../src/store/memcached/placement.js';
import { startMemcachedProcess, uniquePrefix, type MemcachedProcess } from './helpers/memcached.js';
import { startServiceProcess, type ServiceProcess } from './helpers/service-process.js';

const LIMIT = 10;
const CLIENTS = 30;
/** Each client checks this often, alternating instances. */
const GAP_MS = 40;
const HOLD_DOWN_MS = 1000;
const SETTLE_MS = 2000;

const folder = mkdtempSync(join(tmpdir(), 'memgate-failover-'));
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(folder, { recursive: true, force: true });
});

interface Answer {
  readonly client: number;
  /** Date.now() when the check was sent. */
  readonly sentAt: number;
  /** Date.now() when the answer came. */
  readonly at: number;
  readonly allowed: boolean;
  readonly degraded: boolean;
}

/** Each client checks every GAP_MS, alternating instances, until `until` resolves. */
async function checkAll(
  services: readonly ServiceProcess[],
  answers: Answer[],
  until: Promise<unknown>,
): Promise<Answer[]> {
  let stop = false;
  const stopping = () => {
    stop = true;
  };
  until.then(stopping, stopping);
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      for (let turn = client; !stop; turn++) {
        const service = services[turn % services.length] as ServiceProcess;
        const sentAt = Date.now();
        const response = await fetch(`${service.url}/check?event=api&feature=client-${client}`);
        const body = (await response.json()) as { allowed?: boolean; degraded?: boolean };
        expect([200, 429], JSON.stringify(body)).toContain(response.status);
        answers.push({
          client,
          sentAt,
          at: Date.now(),
          allowed: body.allowed === true,
          degraded: body.degraded === true,
        });
        await sleep(GAP_MS);
      }
    }),
  );
  return answers;
}

async function readyz(service: ServiceProcess) {
  const response = await fetch(`${service.url}/readyz`);
  return {
    status: response.status,
    body: (await response.json()) as {
      servers: { server: string; up: boolean; state: string; failedOverTo?: string[] }[];
    },
  };
}

async function metric(service: ServiceProcess, line: RegExp): Promise<number> {
  const text = await fetch(`${service.url}/metrics`).then((response) => response.text());
  return text
    .split('\n')
    .filter((each) => line.test(each))
    .reduce((sum, each) => sum + Number(each.split(' ').at(-1)), 0);
}

/**
 * Until every client has been refused once: all at their limit at home, so whatever is
 * admitted after a fault is counted where the clients moved. (A fixed wait was not enough
 * on a loaded CI host: a client still short of its limit was admitted at home after it.)
 */
function everyClientLimited(answers: readonly Answer[]): Promise<number> {
  const limited = () => new Set(answers.filter((a) => !a.allowed).map((a) => a.client)).size === CLIENTS;
  return when(() => Promise.resolve(limited()), 20_000);
}

/**
 * Until every client of `clients` has been refused, without the store's fault, by a check sent
 * after `after`: limited where it is counted then. A denial repeated from memory is at most
 * DEFAULTS.maxDenialCacheMs old, so one sent later than that after a move was decided after it.
 */
function limitedSince(answers: readonly Answer[], clients: readonly number[], after: number): Promise<number> {
  const sentAfter = after + DEFAULTS.maxDenialCacheMs + 100;
  const limited = (client: number) =>
    answers.some((a) => a.client === client && !a.allowed && !a.degraded && a.sentAt > sentAfter);
  return when(() => Promise.resolve(clients.every(limited)), 20_000);
}

/** Until both instances' /readyz list the victim failed over (to servers of the cluster). */
function failedOver(services: readonly ServiceProcess[], victim: number, labels: readonly string[]): Promise<number> {
  return when(async () => {
    const states = await Promise.all(services.map(readyz));
    return states.every(({ status, body }) => {
      const server = body.servers[victim];
      const movedTo = server?.failedOverTo ?? [];
      return (
        status === 200 &&
        server?.state === 'failed-over' &&
        movedTo.length > 0 &&
        movedTo.every((label) => labels.includes(label))
      );
    });
  }, 10_000);
}

/** Polls until `done` holds, returning Date.now() then. */
async function when(done: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (await done()) return Date.now();
    await sleep(25);
  }
  throw new Error(`not within ${timeoutMs} ms`);
}

/** Three memcached processes, two memgate processes failing over between them, and the clients the victim holds. */
async function cluster() {
  const nodes: MemcachedProcess[] = await Promise.all(Array.from({ length: 3 }, () => startMemcachedProcess()));
  cleanups.push(() => Promise.all(nodes.map((node) => node.stop())));
  const labels = nodes.map((node) => node.servers);
  const policy = join(folder, 'policies.yaml');
  writeFileSync(policy, `events:\n  api:\n    limits: [{ limit: ${LIMIT}, window: 1m }]\n`);
  const env = {
    MEMGATE_CONFIG: policy,
    MEMGATE_KEY_PREFIX: uniquePrefix(),
    MEMCACHED_SERVERS: labels.join(','),
    MEMCACHED_FAILOVER_HOLD_DOWN_MS: String(HOLD_DOWN_MS),
    MEMCACHED_FAILOVER_SETTLE_MS: String(SETTLE_MS),
  };
  const services = await Promise.all([startServiceProcess(env), startServiceProcess(env)]);
  cleanups.push(() => Promise.all(services.map((service) => service.stop())));

  // Which clients each node holds: the ring memgate uses, every server placed.
  const ring = new Placement({ servers: labels });
  // The victim is the node holding the most clients: at least a third of them.
  const clients = Array.from({ length: CLIENTS }, (_, client) => client);
  const held = labels.map((_, node) => clients.filter((client) => ring.homeOf(`{api:=client-${client}}`) === node));
  const victim = held.reduce((most, each, node) => (each.length > (held[most]?.length ?? 0) ? node : most), 0);
  const moved = held[victim] ?? [];
  expect(moved.length).toBeGreaterThanOrEqual(CLIENTS / 3);
  expect(CLIENTS - moved.length).toBeGreaterThan(3);

  return { nodes, labels, services, moved, victim };
}

describe('a Memcached node that dies under load, and comes back', () => {
  it('fails its clients over within a second, at most one more limit each way, and moves them back after the settle time', async () => {
    const { nodes, labels, services, moved, victim } = await cluster();

    let killedAt = 0;
    let restartedAt = 0;
    const returnedAt: number[] = [];
    const answers: Answer[] = [];
    const scenario = (async () => {
      await everyClientLimited(answers);
      killedAt = Date.now();
      await nodes[victim]?.stop();
      const stoppedAt = Date.now();
      // Both instances show it failed over well within the 2.5 s the test once slept for it.
      expect((await failedOver(services, victim, labels)) - stoppedAt).toBeLessThan(2500);
      for (const { body } of await Promise.all(services.map(readyz))) expect(body.servers[victim]?.up).toBe(false);
      // Every moved client limited where it moved before the node returns: what it is admitted
      // there is then the whole of its second limit, however slow the host.
      await limitedSince(answers, moved, stoppedAt);
      // Before the start: the node may take its first connection (memgate's probe) before the helper sees it listen.
      restartedAt = Date.now();
      nodes[victim] = await startMemcachedProcess({ port: nodes[victim]?.port ?? 0 });
      for (const service of services) {
        returnedAt.push(
          await when(async () => (await readyz(service)).body.servers[victim]?.state === 'up', SETTLE_MS + 5000),
        );
      }
      // The moved clients reach their limit at home again.
      await limitedSince(answers, moved, Math.max(...returnedAt));
    })();
    await checkAll(services, answers, scenario);
    await scenario;

    const admitted = (client: number, from: number, to: number) =>
      answers.filter((a) => a.client === client && a.allowed && a.at >= from && a.at < to).length;
    // Every admission of the test falls within one window of a minute.
    expect(Math.max(...answers.map((a) => a.at)) - Math.min(...answers.map((a) => a.at))).toBeLessThan(50_000);

    // Limited again within a second of the kill: no decision without the store after it.
    const lateDegraded = answers.filter((a) => a.degraded && a.at > killedAt + 1000);
    expect(lateDegraded).toEqual([]);
    const degraded = answers.filter((a) => a.degraded);
    for (let client = 0; client < CLIENTS; client++) {
      const total = admitted(client, 0, Infinity);
      if (!moved.includes(client)) {
        // A client of a node that stayed up never moves: exactly its limit.
        expect(total, `client-${client}`).toBe(LIMIT);
        continue;
      }
      // Across the kill, at most one more limit (what the dead node counted is gone); across
      // the return, the same (the restarted node starts from zero).
      expect(admitted(client, 0, restartedAt), `client-${client} across the kill`).toBeLessThanOrEqual(2 * LIMIT);
      expect(admitted(client, killedAt + 1000, Infinity), `client-${client} across the return`).toBeLessThanOrEqual(
        2 * LIMIT,
      );
      expect(total, `client-${client}`).toBeLessThanOrEqual(
        3 * LIMIT + degraded.filter((a) => a.client === client).length,
      );
      // Counted on the others, not degraded nor refused: it used a second limit there.
      expect(admitted(client, killedAt, restartedAt), `client-${client} failed over`).toBe(LIMIT);
      // Limited by the end.
      const last = answers.filter((a) => a.client === client).at(-1);
      expect(last?.allowed, `client-${client} at the end`).toBe(false);
    }

    // Placement returned after the settle time (counted from the node's first answer, after
    // its restart), on both instances, within a second of each other.
    for (const at of returnedAt) expect(at - restartedAt).toBeGreaterThanOrEqual(SETTLE_MS - 100);
    const logged = services.map((service) => service.logs.filter((line) => line.server === labels[victim]));
    const returns = logged.map((lines) => lines.filter((line) => String(line.msg).includes('counted on it again')));
    for (const lines of logged) {
      // One line per change: it left (down), it answers again, its clients are back.
      expect(lines.map((line) => line.level)).toEqual([40, 30, 30]);
      expect(String(lines[0]?.msg)).toMatch(/is down .*: its clients are counted on .* from now on/);
      expect(String(lines[1]?.msg)).toMatch(/answers again: its clients move back to it in/);
    }
    const disagreementMs = Math.abs(Number(returns[0]?.[0]?.time) - Number(returns[1]?.[0]?.time));
    expect(disagreementMs).toBeLessThan(1000);
    // eslint-disable-next-line no-console -- the figures are quoted in docs/operations.md, Failover
    console.log(
      `failover: ${moved.length} of ${CLIENTS} clients moved; degraded decisions ${degraded.length} (all within ${degraded.length === 0 ? 0 : Math.max(...degraded.map((a) => a.at - killedAt))} ms of the kill); placement returned ${returnedAt.map((at) => at - restartedAt).join(' and ')} ms after the restart, the instances ${disagreementMs} ms apart`,
    );

    for (const service of services) {
      expect(
        await metric(service, new RegExp(`^memgate_memcached_failovers_total\\{server="${labels[victim]}"\\}`)),
      ).toBe(1);
      expect(
        await metric(service, new RegExp(`^memgate_memcached_checks_placed_away_total\\{home="${labels[victim]}"`)),
      ).toBeGreaterThan(0);
      expect(await metric(service, /^memgate_memcached_failed_over\{/)).toBe(0);
      expect((await readyz(service)).body.servers.map((server) => server.state)).toEqual(['up', 'up', 'up']);
    }
  }, 60_000);

  it('fails a frozen node over at its deadline, and moves its clients back after the thaw, within the bound', async () => {
    const { nodes, labels, services, moved, victim } = await cluster();
    let pausedAt = 0;
    let resumedAt = 0;
    const answers: Answer[] = [];
    const scenario = (async () => {
      await everyClientLimited(answers);
      pausedAt = Date.now();
      await nodes[victim]?.pause();
      expect((await failedOver(services, victim, labels)) - pausedAt).toBeLessThan(2500);
      // Limited where they moved before the thaw: a full limit admitted there.
      await limitedSince(answers, moved, pausedAt);
      nodes[victim]?.resume();
      resumedAt = Date.now();
      const returned = await Promise.all(
        services.map((service) =>
          when(async () => (await readyz(service)).body.servers[victim]?.state === 'up', SETTLE_MS + 5000),
        ),
      );
      await limitedSince(answers, moved, Math.max(...returned));
    })();
    await checkAll(services, answers, scenario);
    await scenario;
    const admitted = (client: number, from: number, to: number) =>
      answers.filter((a) => a.client === client && a.allowed && a.at >= from && a.at < to).length;

    expect(answers.filter((a) => a.degraded && a.at > pausedAt + 1000)).toEqual([]);
    for (let client = 0; client < CLIENTS; client++) {
      if (!moved.includes(client)) {
        expect(admitted(client, 0, Infinity), `client-${client}`).toBe(LIMIT);
        continue;
      }
      const degraded = answers.filter((a) => a.client === client && a.degraded).length;
      expect(admitted(client, pausedAt, resumedAt), `client-${client} failed over`).toBeGreaterThanOrEqual(
        LIMIT - degraded,
      );
      expect(admitted(client, 0, resumedAt), `client-${client} across the freeze`).toBeLessThanOrEqual(
        2 * LIMIT + degraded,
      );
      // Back home the node still has what it counted, but an instance may hold the ended
      // seconds of the window as it read them on the other server: at most one limit more.
      expect(admitted(client, 0, Infinity), `client-${client}`).toBeLessThanOrEqual(3 * LIMIT + degraded);
      // Limited by the end.
      expect(answers.filter((a) => a.client === client).at(-1)?.allowed, `client-${client} at the end`).toBe(false);
    }
    for (const service of services) {
      const lines = service.logs.filter((line) => line.server === labels[victim]);
      expect(String(lines[0]?.msg)).toMatch(/did not answer within 250 ms\): its clients are counted on/);
    }
  }, 60_000);
});

describe('a check whose server freezes while the check waits', () => {
  const policies = {
    events: {
      login: { onStoreError: 'deny', limits: [{ limit: 5, window: '1m' }] },
      bucket: { onStoreError: 'deny', algorithm: 'token-bucket', limits: [{ rate: '5/s', burst: 5 }] },
    },
  };

  async function frozenHome(failover: boolean) {
    const nodes = await Promise.all([startMemcachedProcess(), startMemcachedProcess()]);
    cleanups.push(() => Promise.all(nodes.map((node) => node.stop())));
    const labels = nodes.map((node) => node.servers);
    const store = createMemcachedStore({ servers: labels.join(','), timeoutMs: 200, failover });
    cleanups.push(() => store.close());
    await store.clock?.ready();
    const limiter = createLimiter({ policies, store, keyPrefix: uniquePrefix() });
    const ring = new Placement({ servers: labels });
    // A client of each event on the second server, which freezes.
    const on1 = (event: string) => {
      for (let i = 0; ; i++) if (ring.homeOf(`{${event}:=user-${i}}`) === 1) return `user-${i}`;
    };
    const login = on1('login');
    const bucket = on1('bucket');
    expect((await limiter.check({ event: 'login', feature: login })).allowed).toBe(true);
    await nodes[1].pause();
    const checks = await Promise.all([
      ...Array.from({ length: 3 }, () => limiter.check({ event: 'login', feature: login })),
      limiter.check({ event: 'bucket', feature: bucket }),
    ]);
    return { checks, store, limiter, login };
  }

  it('is sent again to the next server on the ring, and decided there, not by onStoreError', async () => {
    const { checks, store, limiter, login } = await frozenHome(true);
    for (const decision of checks) expect(decision).toMatchObject({ allowed: true });
    for (const decision of checks) expect(decision.degraded).toBeUndefined();
    // Counted there from zero (the 1 counted before the freeze is on the frozen server): 3, and 2 more.
    const more = await Promise.all(Array.from({ length: 6 }, () => limiter.check({ event: 'login', feature: login })));
    expect(more.filter((decision) => decision.allowed)).toHaveLength(2);
    expect((await store.health())[1]).toMatchObject({ up: false, state: 'failed-over' });
  });

  it('is decided by onStoreError with failover off', async () => {
    const { checks, store } = await frozenHome(false);
    for (const decision of checks) expect(decision).toMatchObject({ allowed: false, degraded: true });
    expect((await store.health())[1]).toMatchObject({ up: false, state: 'down' });
  });
});
