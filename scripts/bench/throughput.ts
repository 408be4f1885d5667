// memgate's /check beside the cheapest networked limiter (one Memcached increment), a peer
// library and the naive design, each the same fastify stack in its own process, with each
// of memgate's optimizations turned off in turn.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { markdownTable } from 'markdown-table';
import { featureSpread, runLoad, type LoadSummary } from '../lib/run-load.js';
import { baselineOrWhyNot } from './baseline.js';
import { cpuMicros, startCase, startService, type Measured } from './processes.js';
import { median, verdict, type Suite } from './suite.js';

const CASES = ['floor', 'peer', 'naive', 'memgate-60s', 'memgate-1d'] as const;

/**
 * The A/B case: memgate-60s as built at this commit, unless --baseline names another. It is
 * the build before leases, batches and Envoy's service (issue 23 measured its hot check at
 * 1.06-1.10x the floor's CPU, and the build after them at 1.23-1.26x).
 */
const A_B_COMMIT = 'c256640';
const BASELINE_CASE = 'memgate-60s@baseline';
/** The service itself, as `npm start` runs it, and as built at the A/B commit. */
const SERVICE_CASE = 'memgate-service';
const SERVICE_BASELINE_CASE = 'memgate-service@baseline';
const AT_BASELINE: Readonly<Record<string, string>> = {
  [BASELINE_CASE]: 'memgate-60s',
  [SERVICE_BASELINE_CASE]: SERVICE_CASE,
};

/** What each case is, for the report. */
const DESCRIPTIONS: Record<string, string> = {
  ceiling: 'the same fastify route answering at once, without Memcached: what the HTTP stack alone allows',
  floor: 'one memjs increment per request and nothing else',
  peer: "rate-limiter-flexible's RateLimiterMemcache",
  naive: 'the design read literally: an increment, then 59 separate gets fanned out with p-limit',
  'memgate-60s': 'memgate, 60 s sliding window, 1 s buckets',
  'memgate-1d': 'memgate, 1-day sliding window, hour, minute and second buckets',
  'memgate-60s-uncached':
    'memgate-60s without settled counts kept between checks (`cacheBytes: 0`): every check reads its whole window',
  'memgate-60s-uncorked':
    'memgate-60s with one socket write per check instead of one per event-loop turn (`coalesceWrites: false`)',
  'memgate-1d-uncached': 'memgate-1d without settled counts kept between checks',
  [BASELINE_CASE]: 'memgate-60s as built at an older commit (the A/B case: a regression shows as a number)',
  [SERVICE_CASE]:
    'the memgate service itself (`node dist/main.js`, as `npm start` runs it: its launcher, metrics, usage history, logger and overload shedding), 60 s sliding window, 1 s buckets',
  [SERVICE_BASELINE_CASE]: 'memgate-service as built at the same older commit',
};

interface Workload {
  readonly name: string;
  readonly features: string;
  readonly cases: readonly string[];
}

const WORKLOADS: readonly Workload[] = [
  {
    name: 'one hot feature',
    features: 'hot',
    cases: [
      ...CASES,
      BASELINE_CASE,
      SERVICE_CASE,
      SERVICE_BASELINE_CASE,
      'ceiling',
      'memgate-60s-uncached',
      'memgate-60s-uncorked',
      'memgate-1d-uncached',
    ],
  },
  { name: '100,000 features, Zipf', features: 'zipf:100000', cases: [...CASES, BASELINE_CASE] },
];

/**
 * Targets against the floor, same workload and run: requests per second at least, and (issue
 * 23, the hot allowed check) the server's CPU per request at most.
 */
const TARGETS: { workload: string; case: string; throughputAtLeast: number; cpuAtMost?: number }[] = [
  { workload: 'one hot feature', case: 'memgate-60s', throughputAtLeast: 0.9, cpuAtMost: 1.1 },
  { workload: '100,000 features, Zipf', case: 'memgate-60s', throughputAtLeast: 0.7 },
  { workload: 'one hot feature', case: 'memgate-1d', throughputAtLeast: 0.8 },
  // Issue 40: the service as it is deployed, not only the bare app, at least as cheap as the floor.
  { workload: 'one hot feature', case: SERVICE_CASE, throughputAtLeast: 1.0, cpuAtMost: 1.0 },
];

/** The service's limit: high enough that every request is allowed, as server.ts's cases are. */
const HIGH_LIMIT = 1_000_000_000;

/**
 * Seconds of load before each measured run: the JIT's warm-up, not measured. The service
 * compiles on V8 helper threads it runs below its serving thread (src/main.ts), so under this
 * load its code is optimized later than a bare case's: after 1 s a hot check still cost it
 * 45.8 against 35.2 µs of CPU with the helpers at the serving thread's priority, after 10 s
 * 32.9 against 31.0 (alternating rounds, a loaded machine). 3 s measures every case warm.
 */
const WARM_UP_SECONDS = 3;

/** One run of one case: autocannon's summary and the server's CPU per answered request. */
interface Run extends LoadSummary {
  readonly cpuMicrosPerRequest: number;
}

export const throughput: Suite = {
  name: 'throughput',
  about:
    'memgate against one-increment floor, rate-limiter-flexible and the naive design, each optimization off in turn',
  estimateSeconds: ({ duration, rounds }) =>
    rounds * WORKLOADS.reduce((sum, w) => sum + w.cases.length, 0) * (duration + WARM_UP_SECONDS + 2),

  run: async ({ servers, duration, connections, rounds, progress, doing, baseline }) => {
    doing(`throughput: building ${baseline ?? A_B_COMMIT} for the A/B case`);
    const older = await baselineOrWhyNot(baseline ?? A_B_COMMIT);
    if (older instanceof Error) progress(`throughput: no A/B case: ${older.message}`);
    const workloads = WORKLOADS.map((workload) => ({
      ...workload,
      cases: workload.cases.filter((name) => !(name in AT_BASELINE) || !(older instanceof Error)),
    }));
    // The service's policy file: one event, limited high enough that every check is allowed.
    const policies = join(await mkdtemp(join(tmpdir(), 'memgate-bench-')), 'policies.yaml');
    await writeFile(policies, `events:\n  bench:\n    limits:\n      - { limit: ${HIGH_LIMIT}, window: 60s }\n`);
    const start = (name: string): Promise<Measured> => {
      const built = AT_BASELINE[name];
      const root = built !== undefined && !(older instanceof Error) ? older.root : undefined;
      const options = root === undefined ? {} : { root };
      const base = built ?? name;
      if (base !== SERVICE_CASE) return startCase(base, servers, options);
      return startService(
        { MEMCACHED_SERVERS: servers, MEMGATE_CONFIG: policies, MEMGATE_KEY_PREFIX: `tp${process.pid}${name.length}` },
        options,
      );
    };
    const runs = new Map<string, Run[]>();
    const key = (workload: string, name: string) => `${workload}|${name}`;
    for (let round = 1; round <= rounds; round++) {
      for (const workload of workloads) {
        // Reversed every other round: no case always runs first (and an A/B case's two builds
        // take turns going first), as the deny and grpc suites alternate theirs.
        const order = round % 2 === 1 ? workload.cases : [...workload.cases].reverse();
        for (const name of order) {
          doing(`throughput, round ${round}/${rounds}: ${workload.name}, ${name}`);
          const server = await start(name);
          await runLoad({
            url: server.url,
            event: 'bench',
            connections,
            duration: WARM_UP_SECONDS,
            nextFeature: featureSpread(workload.features, round),
          });
          const before = await cpuMicros(server.pid);
          const summary = await runLoad({
            url: server.url,
            event: 'bench',
            connections,
            duration,
            nextFeature: featureSpread(workload.features, round),
          });
          const after = await cpuMicros(server.pid);
          await server.stop();
          const used = after.user + after.system - before.user - before.system;
          const run = { ...summary, cpuMicrosPerRequest: used / Math.max(1, summary.requests) };
          progress(
            `throughput, round ${round}/${rounds}: ${workload.name}, ${name}: ${summary.throughput} req/s, p99 ${summary.latencyMs.p99} ms, ${run.cpuMicrosPerRequest.toFixed(1)} µs CPU/req${summary.errors > 0 ? `, ${summary.errors} errors` : ''}`,
          );
          runs.set(key(workload.name, name), [...(runs.get(key(workload.name, name)) ?? []), run]);
        }
      }
    }
    const of = (workload: string, name: string) => runs.get(key(workload, name)) ?? [];
    const rate = (workload: string, name: string) => median(of(workload, name).map((s) => s.throughput));
    const p99 = (workload: string, name: string) => median(of(workload, name).map((s) => s.latencyMs.p99));
    const cpu = (workload: string, name: string) => median(of(workload, name).map((s) => s.cpuMicrosPerRequest));
    const errors = (workload: string, name: string) => of(workload, name).reduce((sum, s) => sum + s.errors, 0);

    const nameOf = (name: string) => {
      const built = AT_BASELINE[name];
      return built !== undefined && !(older instanceof Error) ? `${built} @${older.commit.slice(0, 7)}` : name;
    };
    const rows = workloads.flatMap((workload) =>
      workload.cases.map((name) => {
        const ratio = rate(workload.name, name) / rate(workload.name, 'floor');
        // CPU per request against the floor's: what a case costs, whoever is the bottleneck.
        const cpuRatio = cpu(workload.name, name) / cpu(workload.name, 'floor');
        const target = TARGETS.find((t) => t.workload === workload.name && t.case === name);
        return [
          workload.name,
          nameOf(name),
          String(Math.round(rate(workload.name, name))),
          String(p99(workload.name, name)),
          target ? verdict(ratio, target.throughputAtLeast, 'at least') : `${ratio.toFixed(2)}×`,
          cpu(workload.name, name).toFixed(1),
          target?.cpuAtMost === undefined ? `${cpuRatio.toFixed(2)}×` : verdict(cpuRatio, target.cpuAtMost, 'at most'),
          String(errors(workload.name, name)),
        ];
      }),
    );
    const table = markdownTable(
      [
        [
          'workload',
          'case',
          'req/s (median)',
          'p99 ms',
          'req/s vs floor (target)',
          'server CPU µs/req',
          'CPU/req vs floor (target)',
          'errors',
        ],
        ...rows,
      ],
      { align: ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r'] },
    );
    const hot = 'one hot feature';
    const peerLine = `memgate-60s against the peer, one hot feature: ${verdict(rate(hot, 'memgate-60s') / rate(hot, 'peer'), 1.3, 'at least')} in req/s, ${verdict(cpu(hot, 'peer') / cpu(hot, 'memgate-60s'), 1.3, 'at least')} in requests per server CPU-second; memgate-60s p99 ${p99(hot, 'memgate-60s')} ms against the floor's ${p99(hot, 'floor')} ms (target ≤ 2×).`;
    const ceilingLine = `The ceiling, the same HTTP route answering without any work, bounds every case on this machine: ${(rate(hot, 'ceiling') / rate(hot, 'floor')).toFixed(2)}× the floor in req/s, ${(cpu(hot, 'floor') / cpu(hot, 'ceiling')).toFixed(2)}× per CPU-second.`;
    const cases = workloads.flatMap((w) => w.cases).filter((name, i, all) => all.indexOf(name) === i);
    const markdown = `## Throughput

Produced by \`npm run bench -- --suite throughput --duration ${duration} --connections ${connections} --rounds ${rounds}${baseline === undefined ? '' : ` --baseline ${baseline}`}\`.

Each case is the same fastify HTTP stack answering \`GET /check\`, in its own process, loaded by autocannon (${connections} connections, ${duration} s per run) from the bench process, all on one machine with one Memcached. The cases ending in \`-uncached\` or \`-uncorked\` turn one of memgate's optimizations off, to measure what each brings ([design](design.md#what-an-instance-keeps-between-checks)); memgate-service is the service itself, started as \`npm start\` starts it, with everything it runs beside a check; the ones named with \`@\` and a commit are memgate-60s and memgate-service as built there (\`--baseline\` names another, \`--baseline main\` compares a change with main), so that a regression shows as a number. Every case runs once per round, in turn, the order reversed every other round, after ${WARM_UP_SECONDS} s of load that is not measured, and the table shows medians over ${rounds} rounds. Limits are high enough that every request is allowed. "Server CPU µs/req" is the case's server process's CPU time (user and system, from \`/proc\`) over the requests it answered; it does not depend on which process was the bottleneck of a run.

${cases.map((name) => `- **${nameOf(name)}**: ${DESCRIPTIONS[name] ?? name}`).join('\n')}

${table}

${peerLine}

${ceilingLine}
`;
    return { markdown, summary: `${table}\n\n${peerLine}\n${ceilingLine}` };
  },
};
