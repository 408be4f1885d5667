// One view of the cluster (issue 38, point 5), with real parts: three memcached processes.
// Instances that saw the same outage place every client alike, whatever order they saw the
// servers die and come back in; /readyz stays 200 while failover counts every client, the
// moment its move is decided included; a port that speaks another protocol is told once.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { createLimiter, type Limiter } from '../src/counting/limiter.js';
import type { CounterStore } from '../src/store/counter-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { Placement, type PlacementChange } from '../src/store/memcached/placement.js';
import { startMemcachedProcess, uniquePrefix, type MemcachedProcess } from './helpers/memcached.js';
import { startServiceProcess } from './helpers/service-process.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** Polls until `done` holds, returning Date.now() then. */
async function when(done: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (await done()) return Date.now();
    await sleep(20);
  }
  throw new Error(`${what}: not within ${timeoutMs} ms`);
}

async function threeNodes(): Promise<MemcachedProcess[]> {
  const nodes: MemcachedProcess[] = [];
  for (let i = 0; i < 3; i++) nodes.push(await startMemcachedProcess());
  cleanups.push(() => Promise.all(nodes.map((node) => node.stop())));
  return nodes;
}

describe('three instances through a total outage and a staggered return', () => {
  const LIMIT = 5;
  const CLIENTS = 15;
  const HOLD_DOWN_MS = 5000;
  const SETTLE_MS = 1500;
  /** The third node comes back this long after the first two (which come back together): after the settle time. */
  const STAGGER_MS = 2500;

  /** One instance: its store and limiter over the three nodes, and each change of its placement with when it came. */
  interface Instance {
    readonly name: string;
    readonly store: CounterStore;
    readonly limiter: Limiter;
    readonly changes: { readonly at: number; readonly change: PlacementChange }[];
  }

  function instance(name: string, servers: string, keyPrefix: string): Instance {
    const changes: Instance['changes'] = [];
    const store = createMemcachedStore({
      servers,
      timeoutMs: 250,
      failoverHoldDownMs: HOLD_DOWN_MS,
      failoverSettleMs: SETTLE_MS,
      onPlacementChange: (change) => changes.push({ at: Date.now(), change }),
    });
    cleanups.push(() => store.close());
    const limiter = createLimiter({
      policies: { events: { api: { onStoreError: 'deny', limits: [{ limit: LIMIT, window: '1m' }] } } },
      store,
      keyPrefix,
    });
    return { name, store, limiter, changes };
  }

  /** The servers out of placement on an instance after its changes up to `at` (none out at its start). */
  function outAt(changes: Instance['changes'], at: number): string {
    const out = new Set<string>();
    for (const { at: changedAt, change } of changes) {
      if (changedAt > at) break;
      if (change.kind === 'left') out.add(change.server);
      else if (change.kind === 'returned') out.delete(change.server);
    }
    return [...out].sort().join(',');
  }

  it('places every client alike on every instance within a probe of each change, and admits at most a limit per server it was counted on', async () => {
    const nodes = await threeNodes();
    const labels = nodes.map((node) => node.servers);
    const servers = labels.join(',');
    const keyPrefix = uniquePrefix();
    const a = instance('a', servers, keyPrefix);
    const b = instance('b', servers, keyPrefix);
    await Promise.all([a.store.clock?.ready(), b.store.clock?.ready()]);
    const states = async (one: Instance) => (await one.store.health()).map((server) => server.state).join(',');

    // All three die at once: each instance sees them go in an order of its own.
    await Promise.all(nodes.map((node) => node.stop()));
    for (const one of [a, b])
      await when(
        async () => (await one.store.health()).every((server) => !server.up),
        5000,
        `${one.name} sees the outage`,
      );
    // A third instance starts during the outage: it saw none of them die, the utmost of another order.
    const c = instance('c', servers, keyPrefix);
    const instances = [a, b, c];

    // Every client checks every 40 ms, turn by turn on each instance: denied (onStoreError) until its counters answer.
    const answers: { client: number; at: number; allowed: boolean; degraded: boolean }[] = [];
    let stop = false;
    const traffic = Promise.all(
      Array.from({ length: CLIENTS }, async (_, client) => {
        for (let turn = client; !stop; turn++) {
          const one = instances[turn % instances.length] as Instance;
          const decision = await one.limiter.check({ event: 'api', feature: `client-${client}` });
          answers.push({ client, at: Date.now(), allowed: decision.allowed, degraded: decision.degraded === true });
          await sleep(40);
        }
      }),
    );
    // Longer than the hold-down: what the outage started has run out by the return.
    await sleep(HOLD_DOWN_MS + 500);
    expect(answers.filter((answer) => answer.allowed)).toEqual([]);

    // The first two come back together, the third after the settle time.
    const returnedAt = Date.now();
    const [first, second] = await Promise.all([0, 1].map((i) => startMemcachedProcess({ port: nodes[i]?.port ?? 0 })));
    nodes[0] = first as MemcachedProcess;
    nodes[1] = second as MemcachedProcess;
    await sleep(STAGGER_MS);
    nodes[2] = await startMemcachedProcess({ port: nodes[2]?.port ?? 0 });
    // Back home on every instance, then a while more of checks at home.
    for (const one of instances)
      await when(async () => (await states(one)) === 'up,up,up', HOLD_DOWN_MS + 5000, `${one.name} all up`);
    await sleep(1500);
    stop = true;
    await traffic;
    const endedAt = Date.now();

    // The same placement at the end on every instance.
    expect(await Promise.all(instances.map(states))).toEqual(['up,up,up', 'up,up,up', 'up,up,up']);

    // From the return on, the instances' placements differ only for moments: the time each
    // takes to see a server answer (a probe every 100 ms). Every change of any instance is a
    // moment the others may not have caught up with yet.
    const moments = [
      returnedAt,
      ...instances.flatMap((one) => one.changes.map(({ at }) => at)).filter((at) => at > returnedAt),
      endedAt,
    ].sort((x, y) => x - y);
    let apartSince: number | undefined;
    let longestApartMs = 0;
    for (const at of moments) {
      const views = new Set(instances.map((one) => outAt(one.changes, at)));
      if (views.size > 1) apartSince ??= at;
      else if (apartSince !== undefined) {
        longestApartMs = Math.max(longestApartMs, at - apartSince);
        apartSince = undefined;
      }
    }
    expect(apartSince, 'apart at the end').toBeUndefined();
    expect(longestApartMs, 'the longest the instances placed a client apart').toBeLessThan(1000);

    // Which server each client was counted on, by any instance, from the return on.
    const ring = new Placement({ servers: labels });
    const views = new Set(
      instances.flatMap((one) => [
        outAt(one.changes, returnedAt),
        ...one.changes.filter(({ at }) => at > returnedAt).map(({ at }) => outAt(one.changes, at)),
      ]),
    );
    const placedOn = (client: number, out: string): number => {
      const placement = new Placement({ servers: labels, failover: true });
      for (const server of out.split(',').filter(Boolean)) placement.down(labels.indexOf(server), 'out');
      return placement.serverOf(`{api:=client-${client}}`);
    };
    const report: string[] = [];
    for (let client = 0; client < CLIENTS; client++) {
      const counted = new Set([...views].map((out) => placedOn(client, out)));
      counted.add(ring.homeOf(`{api:=client-${client}}`));
      const moves = counted.size - 1;
      const admitted = answers.filter((answer) => answer.client === client && answer.allowed).length;
      // Every restarted node starts empty: a limit per server the client was counted on, no more.
      expect(admitted, `client-${client}, moved ${moves} times`).toBeLessThanOrEqual(LIMIT * (1 + moves));
      // And limited by the end, at home.
      expect(answers.filter((answer) => answer.client === client).at(-1)?.allowed, `client-${client}`).toBe(false);
      report.push(`${admitted}/${moves}`);
    }
    // eslint-disable-next-line no-console -- the figures are quoted in docs/operations.md, Failover
    console.log(
      `cluster view: instances apart at most ${longestApartMs} ms after the return; admitted/moves per client ${report.join(' ')} (limit ${LIMIT})`,
    );
  }, 60_000);
});

describe('/readyz while failover counts every client', () => {
  it('answers 200 throughout when one node of three freezes, and when one dies, the moment its move is decided included', async () => {
    const nodes = await threeNodes();
    const folder = mkdtempSync(join(tmpdir(), 'memgate-readyz-'));
    cleanups.push(() => {
      rmSync(folder, { recursive: true, force: true });
      return Promise.resolve();
    });
    const policy = join(folder, 'policies.yaml');
    writeFileSync(policy, 'events:\n  api:\n    limits: [{ limit: 10, window: 1m }]\n');
    const service = await startServiceProcess({
      MEMGATE_CONFIG: policy,
      MEMCACHED_SERVERS: nodes.map((node) => node.servers).join(','),
    });
    cleanups.push(() => service.stop());
    const readyz = async () => {
      const response = await fetch(`${service.url}/readyz`);
      const body = (await response.json()) as { servers: { state: string }[] };
      return { status: response.status, states: body.servers.map((server) => server.state).join(',') };
    };
    expect(await readyz()).toEqual({ status: 200, states: 'up,up,up' });

    // /readyz asked over and over, at times as an idle instance is (no call for longer than half a deadline).
    const answers: { status: number; states: string }[] = [];
    const asked = { enough: false };
    const asking = (async () => {
      for (let turn = 0; !asked.enough; turn++) {
        answers.push(await readyz());
        await sleep(turn % 2 === 0 ? 10 : 300);
      }
    })();
    const seen = (states: string) => when(() => answers.at(-1)?.states === states, 10_000, states);

    // A frozen node is found down by /readyz's own question, at its deadline: that is when the move is decided.
    await nodes[1]?.pause();
    await seen('up,failed-over,up');
    await sleep(700);
    // A node that dies: its connections close at once.
    await nodes[2]?.stop();
    await seen('up,failed-over,failed-over');
    await sleep(700);
    asked.enough = true;
    await asking;
    nodes[1]?.resume();

    expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
    expect(answers.map((answer) => answer.states)).toContain('up,failed-over,failed-over');
  }, 30_000);
});

describe('a server that is not Memcached', () => {
  /** A TCP server that answers whatever it is sent, and every new connection, with text of another protocol. */
  async function notMemcached(): Promise<{ server: Server; label: string; connections: () => number }> {
    let connections = 0;
    const server = createServer((socket: Socket) => {
      connections++;
      socket.on('error', () => undefined);
      socket.write('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n');
      socket.on('data', () => socket.end('-ERR unknown command\r\n'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => server.close(resolve)));
    const address = server.address();
    if (typeof address !== 'object' || address === null) throw new Error('no port');
    return { server, label: `127.0.0.1:${address.port}`, connections: () => connections };
  }

  it('is logged once as down, with why, and never as answering again, while it is probed', async () => {
    const { label, connections } = await notMemcached();
    const [node] = await threeNodes();
    const service = await startServiceProcess({
      MEMCACHED_SERVERS: `${node?.servers ?? ''},${label}`,
    });
    cleanups.push(() => service.stop());
    // Probed all the while (every 100 ms): several dozen connections, each answered with text.
    await when(() => connections() >= 15, 10_000, 'probes');
    await sleep(500);
    const about = service.logs.filter((line) => JSON.stringify(line).includes(label) && line.port === undefined);
    expect(about.map((line) => line.msg)).toHaveLength(1);
    expect(String(about[0]?.msg)).toMatch(/not Memcached's binary protocol/);
    expect(service.logs.filter((line) => String(line.msg).includes('answers again'))).toEqual([]);
    // It serves: /readyz lists the server as failed over to the one that answers.
    const readyz = (await (await fetch(`${service.url}/readyz`)).json()) as {
      servers: { server: string; state: string }[];
    };
    expect(readyz.servers.find((server) => server.server === label)).toMatchObject({ state: 'failed-over' });
  }, 30_000);

  it('never counts as up in a store, and a check of its clients is counted on the server that answers', async () => {
    const { label, connections } = await notMemcached();
    const [node] = await threeNodes();
    const transitions: string[] = [];
    const store = createMemcachedStore({
      servers: `${node?.servers ?? ''},${label}`,
      onServerState: (server, state) => transitions.push(`${server} ${state.up ? 'up' : `down: ${state.reason}`}`),
    });
    cleanups.push(() => store.close());
    const limiter = createLimiter({
      policies: { events: { api: { onStoreError: 'deny', limits: [{ limit: 3, window: '1m' }] } } },
      store,
      keyPrefix: uniquePrefix(),
    });
    await store.clock?.ready();
    const decisions = await Promise.all(
      Array.from({ length: 20 }, (_, i) => limiter.check({ event: 'api', feature: `user-${i % 5}` })),
    );
    expect(decisions.filter((decision) => decision.degraded === true)).toEqual([]);
    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(15);
    // Probed all the while, and never up.
    const probes = connections();
    await when(() => connections() >= probes + 10, 10_000, 'probes');
    expect(transitions).toEqual([
      `${label} down: it answers with bytes that are not Memcached's binary protocol: another service on this port?`,
    ]);
  }, 30_000);
});
