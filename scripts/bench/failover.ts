// What a Memcached node's death costs in admissions: three memcached processes of the suite's
// own and two instances (two stores, each judging the servers for itself, as two memgate
// processes do) in this process, clients checking at a steady pace, each at its limit. One
// node is killed (or frozen), then started again (or thawed); per client, what was admitted
// beyond its limit across each move, and how long until every check was counted again.
import { markdownTable } from 'markdown-table';
import { setTimeout as sleep } from 'node:timers/promises';
import { Placement } from '../../src/store/memcached/placement.js';
import { startMemcachedProcess, type MemcachedProcess } from '../lib/memcached-process.js';
import { memgateModules } from './compiled.js';
import { median, type Suite } from './suite.js';

const LIMIT = 50;
const CLIENTS = 300;
/** Each client checks this often, alternating instances: 6,000 checks a second in all. */
const GAP_MS = 50;
const HOLD_DOWN_MS = 2000;
const SETTLE_MS = 3000;
/** Before the fault: every client reaches its limit. Then the outage, then after the return. */
const FILL_MS = 3000;
const OUTAGE_MS = 4000;
const AFTER_MS = 3000;

interface Scenario {
  readonly name: string;
  readonly failover: boolean;
  /** A kill and a restart on the same port, or a freeze (SIGSTOP) and a thaw. */
  readonly fault: 'kill' | 'freeze';
}

const SCENARIOS: readonly Scenario[] = [
  { name: 'kill, restart (failover on)', failover: true, fault: 'kill' },
  { name: 'freeze, thaw (failover on)', failover: true, fault: 'freeze' },
  { name: 'kill, restart (failover off)', failover: false, fault: 'kill' },
];

interface Answer {
  readonly client: number;
  readonly at: number;
  readonly allowed: boolean;
  readonly degraded: boolean;
}

interface Outcome {
  readonly name: string;
  readonly moved: number;
  /** Per moved client, admitted beyond its limit from the start to the fault's end (one move), and in the whole run (two). */
  readonly overAcrossFault: readonly number[];
  readonly overInAll: readonly number[];
  /** The most any client that did not move was admitted beyond its limit. */
  readonly overUnmoved: number;
  readonly degraded: number;
  /** The last decision made without the store, in ms after the fault; undefined without any. */
  readonly lastDegradedMs: number | undefined;
  /** Per instance, ms from the node's restart to its clients' return; undefined when they did not. */
  readonly returnMs: readonly (number | undefined)[];
}

async function runScenario({ name, failover, fault }: Scenario): Promise<Outcome> {
  const { createLimiter, createMemcachedStore } = await memgateModules();
  const nodes: MemcachedProcess[] = [];
  for (let i = 0; i < 3; i++) nodes.push(await startMemcachedProcess());
  const labels = nodes.map((node) => node.servers);
  const ring = new Placement({ servers: labels });
  const victim = 1;
  const moved = new Set(
    Array.from({ length: CLIENTS }, (_, client) => client).filter(
      (client) => ring.homeOf(`{bench:=client-${client}}`) === victim,
    ),
  );
  const returnedAt: (number | undefined)[] = [undefined, undefined];
  const keyPrefix = `fo${Date.now() % 1e6}`;
  const instances = [0, 1].map((instance) => {
    const store = createMemcachedStore({
      servers: labels.join(','),
      failover,
      failoverHoldDownMs: HOLD_DOWN_MS,
      failoverSettleMs: SETTLE_MS,
      // The node is killed on purpose: the bench reports what that did, not a warning per instance.
      logger: false,
      onPlacementChange: (change) => {
        if (change.kind === 'returned') returnedAt[instance] = performance.now();
      },
    });
    return createLimiter({
      policies: { events: { bench: { limits: [{ limit: LIMIT, window: '1m' }] } } },
      store,
      keyPrefix,
    });
  });
  const answers: Answer[] = [];
  let stop = false;
  const clients = Array.from({ length: CLIENTS }, async (_, client) => {
    await sleep((client * GAP_MS) / CLIENTS); // spread over the gap
    for (let turn = client; !stop; turn++) {
      const limiter = instances[turn % 2];
      const decision = await limiter?.check({ event: 'bench', feature: `client-${client}` });
      answers.push({
        client,
        at: performance.now(),
        allowed: decision?.allowed === true,
        degraded: decision?.degraded === true,
      });
      await sleep(GAP_MS);
    }
  });
  await sleep(FILL_MS);
  const faultAt = performance.now();
  const node = nodes[victim] as MemcachedProcess;
  if (fault === 'kill') await node.stop();
  else await node.pause();
  await sleep(OUTAGE_MS);
  if (fault === 'kill') nodes[victim] = await startMemcachedProcess({ port: node.port });
  else node.resume();
  const backAt = performance.now();
  await sleep(HOLD_DOWN_MS + SETTLE_MS + AFTER_MS);
  stop = true;
  await Promise.all(clients);
  for (const limiter of instances) await limiter.close();
  for (const each of nodes) await each.stop();

  const admitted = (client: number, from: number, to: number) =>
    answers.filter((a) => a.client === client && a.allowed && a.at >= from && a.at < to).length;
  const movedClients = [...moved];
  const degraded = answers.filter((a) => a.degraded);
  return {
    name,
    moved: moved.size,
    overAcrossFault: movedClients.map((client) => admitted(client, 0, backAt) - LIMIT),
    overInAll: movedClients.map((client) => admitted(client, 0, Infinity) - LIMIT),
    overUnmoved: Math.max(
      ...Array.from({ length: CLIENTS }, (_, client) => client)
        .filter((client) => !moved.has(client))
        .map((client) => admitted(client, 0, Infinity) - LIMIT),
    ),
    degraded: degraded.length,
    lastDegradedMs: degraded.length === 0 ? undefined : Math.max(...degraded.map((a) => a.at - faultAt)),
    returnMs: returnedAt.map((at) => (at === undefined ? undefined : at - backAt)),
  };
}

const spread = (numbers: readonly number[]) =>
  numbers.length === 0 ? '-' : `${median(numbers)} / ${Math.max(...numbers)}`;

export const failover: Suite = {
  name: 'failover',
  about: "per-client over-admission across a Memcached node's kill and return, two instances, three nodes",
  estimateSeconds: () => SCENARIOS.length * ((FILL_MS + OUTAGE_MS + HOLD_DOWN_MS + SETTLE_MS + AFTER_MS) / 1000 + 2),

  run: async ({ doing, progress }) => {
    const outcomes: Outcome[] = [];
    for (const scenario of SCENARIOS) {
      doing(`failover: ${scenario.name}`);
      const outcome = await runScenario(scenario);
      progress(
        `failover: ${scenario.name}: ${outcome.degraded} degraded, over limit across the fault ${spread(outcome.overAcrossFault)}, in all ${spread(outcome.overInAll)}`,
      );
      outcomes.push(outcome);
    }
    const table = markdownTable(
      [
        [
          'scenario',
          'clients moved',
          'over limit across the fault (median / max)',
          'over limit in the whole run (median / max)',
          'over limit, clients not moved',
          'degraded decisions (last, ms after the fault)',
          'placement back after the restart (ms, each instance)',
        ],
        ...outcomes.map((o) => [
          o.name,
          `${o.moved} of ${CLIENTS}`,
          spread(o.overAcrossFault),
          spread(o.overInAll),
          String(o.overUnmoved),
          o.degraded === 0 ? '0' : `${o.degraded} (${Math.round(o.lastDegradedMs ?? 0)})`,
          o.returnMs.map((ms) => (ms === undefined ? '-' : String(Math.round(ms)))).join(', '),
        ]),
      ],
      { align: ['l', 'r', 'r', 'r', 'r', 'r', 'r'] },
    );
    const markdown = `## Failover

Produced by \`npm run bench -- --suite failover\`.

Three memcached processes of the suite's own and two instances in one process (two stores, each judging the servers for itself), ${CLIENTS} clients checking every ${GAP_MS} ms, alternating instances, each with a limit of ${LIMIT} a minute (sliding) that it reaches before the fault. ${FILL_MS / 1000} s in, one node is killed (SIGKILL) or frozen (SIGSTOP); ${OUTAGE_MS / 1000} s later it is started again on its port or thawed; the run goes on for ${(HOLD_DOWN_MS + SETTLE_MS + AFTER_MS) / 1000} s more (hold-down ${HOLD_DOWN_MS / 1000} s, settle ${SETTLE_MS / 1000} s). The whole run fits in one window, so every admission counts against the same minute. "Over limit" is what a moved client was admitted beyond its ${LIMIT}: across the fault, from the start to the node's return (one move); in the whole run, across the fault and the return (two moves). The documented bound is one limit per move: ${LIMIT} and ${2 * LIMIT}.

${table}

A killed node loses its counts: its clients start from zero on the next node (one more limit), and again on the restarted node (another), the bound's two limits. A frozen node keeps them. Either return can cost less than its limit, or all of it: an instance keeps the counts of the window's ended seconds it has read (settled buckets, see [design](design.md#what-an-instance-keeps-between-checks)) across a move, whichever server they were read on, and reads only the live buckets from the new one; which seconds are ended depends on where the run falls in the minute, so runs of this suite differ in the second column. With failover off, a killed node's clients are decided by \`onStoreError\` (\`allow\`) for the whole outage: unlimited.
`;
    return { markdown, summary: table };
  },
};
