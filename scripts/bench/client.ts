// memgate/client against the memgate service (dist/main.js on the bench's Memcached), in the
// same run: how many checks of a denied feature still reach memgate and how fast the rest
// are answered in the caller, and what batching and quota leases do to the allowed path
// against one POST /check per call.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { markdownTable } from 'markdown-table';
import {
  clientModule,
  concurrentCallers,
  deniedBursts,
  type CallersRun,
  type ClientOptions,
  type DeniedRun,
} from './client-load.js';
import { cpuMicros, startService } from './processes.js';
import { median, type Suite, type SuiteContext } from './suite.js';

/** The denied feature's policy: a short window, so that several retryAfter periods pass in a run. */
const DENIED = { event: 'denied', limit: 1, windowSeconds: 2 } as const;
const DENIED_CHECKS = 100_000;
const DENIED_BURST = 1000;
/** The allowed path: callers awaiting one check after another, of features drawn from FEATURES. */
const CALLERS = 64;
const FEATURES = 1000;
const LEASE = { units: 10, life: '5s' } as const;
/** Seconds of each way's warm-up run, not counted. */
const WARM_UP_SECONDS = 2;

interface Way {
  readonly name: string;
  readonly what: string;
  readonly event: 'allowed' | 'leased';
  readonly options: ClientOptions;
  /** Callers awaiting one check after another, and the features they draw from. */
  readonly callers: number;
  readonly features: number;
  /** The way its checks/s is compared with: one `POST /check` per call, as many callers. */
  readonly baseline: string;
}

/**
 * The allowed path's client timeout: the default (500 ms) would turn a busy machine's slow
 * answers into the client's own degraded ones, which measure nothing of the paths compared.
 */
const MEASURED_TIMEOUT_MS = 5000;

/** A caller alone (a worker on behalf of a few API keys): nothing to batch with, what leases are for. */
const ONE_CALLER = { callers: 1, features: 10, baseline: 'single-alone' } as const;
const CROWD = { callers: CALLERS, features: FEATURES, baseline: 'single' } as const;

const WAYS: readonly Way[] = [
  {
    name: 'single',
    ...CROWD,
    what: 'one `POST /check` per call (`maxBatchSize: 1`)',
    event: 'allowed',
    options: { maxBatchSize: 1 },
  },
  {
    name: 'batched',
    ...CROWD,
    what: 'batching, client defaults (checks of one tick share a request)',
    event: 'allowed',
    options: {},
  },
  {
    name: 'batched-1ms',
    ...CROWD,
    what: 'batching, `batchWindowMs: 1`',
    event: 'allowed',
    options: { batchWindowMs: 1 },
  },
  {
    name: 'leased',
    ...CROWD,
    what: `leases, \`leaseUnits: ${LEASE.units}\``,
    event: 'leased',
    options: { leaseUnits: LEASE.units },
  },
  {
    name: 'single-alone',
    ...ONE_CALLER,
    what: `one caller, ${ONE_CALLER.features} features: one \`POST /check\` per call`,
    event: 'allowed',
    options: { maxBatchSize: 1 },
  },
  {
    name: 'leased-alone',
    ...ONE_CALLER,
    what: `one caller, ${ONE_CALLER.features} features: leases, \`leaseUnits: ${LEASE.units}\``,
    event: 'leased',
    options: { leaseUnits: LEASE.units },
  },
];

const POLICIES = `events:
  ${DENIED.event}:
    limits:
      - { limit: ${DENIED.limit}, window: ${DENIED.windowSeconds}s }
  allowed:
    limits:
      - { limit: 1000000000, window: 60s }
  leased:
    limits:
      - { limit: 1000000000, window: 60s }
    lease: { maxUnits: ${LEASE.units}, life: ${LEASE.life} }
`;

interface WayRun extends CallersRun {
  /** memgate's CPU over the run, the return of the leases still held at its end included, microseconds. */
  readonly memgateCpuMicros: number;
}

export const client: Suite = {
  name: 'client',
  about: 'memgate/client: checks of a denied feature that reach memgate; batching and leases against one /check a call',
  // Each run takes about its seconds (a client closes in well under one); the denied run spans `duration`.
  estimateSeconds: ({ duration, rounds }) => WAYS.length * WARM_UP_SECONDS + rounds * (WAYS.length + 1) * duration + 5,

  run: async (context) => {
    const { servers, duration, rounds, progress, doing } = context;
    const loadBefore = loadavg();
    const dir = await mkdtemp(join(tmpdir(), 'memgate-bench-client-'));
    const policies = join(dir, 'policies.yaml');
    await writeFile(policies, POLICIES);
    const { createClient } = await clientModule();
    const memgate = await startService({
      MEMCACHED_SERVERS: servers,
      MEMGATE_CONFIG: policies,
      MEMGATE_KEY_PREFIX: `client${process.pid}`,
    });
    const denied: DeniedRun[] = [];
    const ways = new Map<string, WayRun[]>(WAYS.map((way) => [way.name, []]));
    try {
      // A warm-up round not counted, then each round the ways in a rotating order, so drift favours none.
      for (let round = 0; round <= rounds; round++) {
        const seconds = round === 0 ? WARM_UP_SECONDS : duration;
        for (let turn = 0; turn < WAYS.length; turn++) {
          const way = WAYS[(turn + round) % WAYS.length] as Way;
          const label = `client, round ${round}/${rounds}${round === 0 ? ' (warm-up)' : ''}: ${way.name}`;
          doing(label);
          const cpuBefore = await cpuMicros(memgate.pid);
          const run = await concurrentCallers({
            createClient,
            url: memgate.url,
            options: { timeoutMs: MEASURED_TIMEOUT_MS, ...way.options },
            event: way.event,
            featurePrefix: `r${round}-${way.name}-`,
            features: way.features,
            seed: round + 1,
            callers: way.callers,
            seconds,
          });
          const cpuAfter = await cpuMicros(memgate.pid);
          const measured: WayRun = {
            ...run,
            memgateCpuMicros: cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system,
          };
          progress(
            `${label}: ${Math.round(measured.checks / measured.seconds)} checks/s, p99 ${measured.latencyMs.p99.toFixed(2)} ms, ${perThousand(measured.requests, measured.checks).toFixed(0)} requests/1,000 checks${measured.denied + measured.degraded > 0 ? `, ${measured.denied} denied, ${measured.degraded} degraded` : ''}`,
          );
          if (round > 0) ways.get(way.name)?.push(measured);
        }
        if (round === 0) continue;
        doing(`client, round ${round}/${rounds}: ${DENIED_CHECKS.toLocaleString('en')} checks of a denied feature`);
        const run = await deniedBursts({
          createClient,
          url: memgate.url,
          event: DENIED.event,
          feature: `abuser-${round}`,
          checks: DENIED_CHECKS,
          burst: DENIED_BURST,
          seconds: duration,
        });
        progress(
          `client, round ${round}/${rounds}: denied feature: ${run.reached.denied} denied and ${run.reached.allowed} allowed checks reached memgate in ${run.seconds.toFixed(1)} s (${periods(run)} periods of ${run.firstRetryAfter} s), ${Math.round(run.localPerSecond)} local answers/s`,
        );
        denied.push(run);
      }
    } finally {
      await memgate.stop();
      await rm(dir, { recursive: true, force: true });
    }
    const load = (avg: number[]) => avg.map((n) => n.toFixed(2)).join(', ');
    return report(context, { denied, ways, load: { before: load(loadBefore), after: load(loadavg()) } });
  },
};

const perThousand = (part: number, checks: number) => (1000 * part) / Math.max(1, checks);
const count = (n: number) => Math.round(n).toLocaleString('en');

/** retryAfter periods the run spanned, counted from the denial that put the feature over its limit. */
function periods(run: DeniedRun): number {
  return Math.ceil(run.seconds / Math.max(1, run.firstRetryAfter));
}

/** Windows the run spanned, and one more for the buckets' edges: the most the window can have admitted is its limit for each. */
function windowsAdmitting(run: DeniedRun): number {
  return Math.ceil(run.seconds / DENIED.windowSeconds) + 1;
}

function deniedVerdict(run: DeniedRun): string {
  const met = run.reached.denied <= periods(run) && run.reached.allowed <= DENIED.limit * windowsAdmitting(run);
  return met ? 'met' : 'NOT met';
}

function report(
  { duration, rounds }: SuiteContext,
  {
    denied,
    ways,
    load,
  }: {
    denied: readonly DeniedRun[];
    ways: ReadonlyMap<string, readonly WayRun[]>;
    load: { before: string; after: string };
  },
): { markdown: string; summary: string } {
  const deniedTable = markdownTable(
    [
      [
        'round',
        'seconds',
        'retryAfter periods',
        'checks that reached memgate: denied + allowed',
        'HTTP requests (client)',
        'checks sent (client) / decided (memgate /metrics)',
        'answered locally',
        'local answers/s',
        'target',
      ],
      ...denied.map((run, index) => [
        String(index + 1),
        run.seconds.toFixed(1),
        `${periods(run)} × ${run.firstRetryAfter} s`,
        `${run.reached.denied} + ${run.reached.allowed}`,
        String(run.reached.requests),
        `${run.clientChecksSent} / ${run.memgateDecisions}`,
        count(run.answeredLocally),
        count(run.localPerSecond),
        deniedVerdict(run),
      ]),
    ],
    { align: ['r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'l'] },
  );
  const everyRoundMet = denied.every((run) => deniedVerdict(run) === 'met');
  const deniedLine = `Denied feature, ${count(DENIED_CHECKS)} checks a round: ${median(denied.map((run) => run.reached.denied + run.reached.allowed))} reached memgate (median of ${denied.length} rounds), ${count(median(denied.map((run) => run.localPerSecond)))} checks/s answered locally; at most one denied check per retryAfter period and what the window admits: ${everyRoundMet ? 'met in every round' : 'NOT met in every round'}.`;

  const medians = new Map(
    WAYS.map((way) => {
      const runs = ways.get(way.name) ?? [];
      const m = (pick: (run: WayRun) => number) => median(runs.map(pick));
      return [
        way.name,
        {
          throughput: m(throughputOf),
          p50: m((run) => run.latencyMs.p50),
          p99: m((run) => run.latencyMs.p99),
          requests: m((run) => perThousand(run.requests, run.checks)),
          decisions: m((run) => perThousand(run.memgateDecisions, run.checks)),
          memgateCpuMs: m((run) => perThousand(run.memgateCpuMicros, run.checks)) / 1000,
          callerCpuMs: m((run) => perThousand(run.callerCpuMicros, run.checks)) / 1000,
          odd: runs.reduce((sum, run) => sum + run.denied + run.degraded, 0),
          leasesTaken: runs.reduce((sum, run) => sum + run.leasesTaken, 0),
          returnsLost: runs.reduce((sum, run) => sum + run.leaseReturnsLost, 0),
        },
      ] as const;
    }),
  );
  const against = (name: string) => {
    const way = medians.get(name);
    const single = medians.get(WAYS.find((w) => w.name === name)?.baseline ?? 'single');
    if (!way || !single) return '';
    return `${(way.throughput / Math.max(1, single.throughput)).toFixed(2)}× the checks/s, ${(way.memgateCpuMs / Math.max(1e-9, single.memgateCpuMs)).toFixed(2)}× memgate's CPU per check, ${(way.requests / 10).toFixed(1)}% of the requests and ${(way.decisions / 10).toFixed(1)}% of the decisions`;
  };
  const wayRows = WAYS.map((way) => {
    const figures = medians.get(way.name);
    if (!figures) return [way.what];
    return [
      way.what,
      count(figures.throughput),
      figures.p50.toFixed(2),
      figures.p99.toFixed(2),
      figures.requests.toFixed(1),
      figures.decisions.toFixed(1),
      figures.memgateCpuMs.toFixed(1),
      figures.callerCpuMs.toFixed(1),
      `${(figures.throughput / Math.max(1, medians.get(way.baseline)?.throughput ?? 0)).toFixed(2)}×`,
      String(figures.odd),
    ];
  });
  const waysLine = `Against one \`POST /check\` per call: batching (defaults) gives ${against('batched')}; with \`batchWindowMs: 1\`, ${against('batched-1ms')}; leases of ${LEASE.units}, ${against('leased')}. A caller alone, against one \`POST /check\` per call alone: leases of ${LEASE.units} give ${against('leased-alone')}. ${count((medians.get('leased')?.returnsLost ?? 0) + (medians.get('leased-alone')?.returnsLost ?? 0))} of the ${count((medians.get('leased')?.leasesTaken ?? 0) + (medians.get('leased-alone')?.leasesTaken ?? 0))} leases of all rounds were not taken back (their return got no answer in time, \`stats.leaseReturnsLost\`).`;
  const waysTable = markdownTable(
    [
      [
        'client',
        'checks/s',
        'p50 ms',
        'p99 ms',
        'HTTP requests / 1,000 checks',
        'memgate decisions / 1,000 checks',
        'memgate CPU ms / 1,000 checks',
        'caller CPU ms / 1,000 checks',
        'checks/s against one /check per call (as many callers)',
        'answers not allowed or degraded (all rounds)',
      ],
      ...wayRows,
    ],
    { align: ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'] },
  );

  const markdown = `## Client-side limiting

Produced by \`npm run bench -- --suite client --duration ${duration} --rounds ${rounds} --write-docs\` on ${new Date().toISOString().slice(0, 10)}. Load average (1, 5, 15 min) at the start of the suite: ${load.before}; at its end: ${load.after}.

\`memgate/client\` in the bench process, against the memgate service (\`node dist/main.js\`, as \`npm start\` runs it) on Memcached. The callers, the client and memgate share the machine's cores (2 on the machine above): the client's work takes CPU from memgate's, so **compare the rows with each other, not with the other sections**. Every run takes a new client with default options but those named, and new features; the allowed path's clients wait up to ${MEASURED_TIMEOUT_MS / 1000} s for an answer (\`timeoutMs\`), so that a slow answer is measured, not decided by the client. See [docs/client.md](client.md) for what the client does.

### A denied feature

One feature of an event with \`limit: ${DENIED.limit}, window: ${DENIED.windowSeconds}s\` is checked until memgate denies it; then ${count(DENIED_CHECKS)} more checks of it go through one client, in ${DENIED_CHECKS / DENIED_BURST} bursts of ${count(DENIED_BURST)} concurrent checks spread over ${duration} s, so that \`retryAfter\` periods pass. The checks that reached memgate are those whose answer came from it (\`source: 'server'\`); the client's \`stats\` and memgate's own \`memgate_decisions_total\` count them again. Local answers a second are over the bursts answered wholly in the caller (from the first check of a burst to its last answer). The target: at most one denied check per \`retryAfter\` period (counted from the denial before the run), and allowed ones no more than the window admits (its limit for each window the run spans, and one more for the buckets' edges).

${deniedTable}

${deniedLine}

### Allowed path: one request per call, batching and leases

${CALLERS} concurrent callers (or, in the last two rows, ${ONE_CALLER.callers} caller alone, which has nothing to batch with), each awaiting one \`check\` after another for ${duration} s, of features drawn uniformly at random (seeded by the round) from ${count(FEATURES)} (${ONE_CALLER.features} for the caller alone), far under their limit (\`1000000000\` a 60 s window). Each way runs once per round in a rotating order, after a warm-up round of ${WARM_UP_SECONDS} s not counted; the table shows medians over ${rounds} rounds. The leases' event has \`lease: { maxUnits: ${LEASE.units}, life: ${LEASE.life} }\`: a lease is one decision at memgate, and its take and its return travel in \`POST /lease/batch\` with the other takes and returns of the same tick (leases still held at the end of a run are returned, and counted, when the client closes). Latency is per call, in the caller, from \`check()\` to its answer. CPU is user and system time, memgate's from \`/proc\`, the caller's (the bench process: callers and client) from \`process.cpuUsage()\`. The client keeps its default 10 keep-alive connections.

${waysTable}

${waysLine}

What the columns mean: without leases memgate decides every allowed check (1,000 decisions per 1,000 checks), and batching cuts only the HTTP requests that carry them (to about one per ${CALLERS} checks, one per caller waiting). A lease of ${LEASE.units} units is one decision for ${LEASE.units} checks, which the caller then answers without waiting, and its take and return share requests with the other leases' (the return of a spent lease goes with the next take of its feature); the leases held when a run ends were taken for checks that did not come, which puts a run's decisions above ${1000 / LEASE.units} per 1,000 checks. A row's checks/s is what the cores allow with the callers, the client and memgate all on them: what one side saves, the other may spend.
`;
  return { markdown, summary: `${deniedTable}\n\n${deniedLine}\n\n${waysTable}\n\n${waysLine}` };
}

const throughputOf = (run: CallersRun) => run.checks / Math.max(1e-9, run.seconds);
