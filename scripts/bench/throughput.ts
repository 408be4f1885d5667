// memgate's /check beside the cheapest networked limiter (one Memcached increment), a peer
// library and the naive design, each the same fastify stack in its own process, with each
// of memgate's optimizations turned off in turn.
import { markdownTable } from 'markdown-table';
import { featureSpread, runLoad, type LoadSummary } from '../lib/run-load.js';
import { cpuMicros, startCase } from './processes.js';
import { median, verdict, type Suite } from './suite.js';

const CASES = ['floor', 'peer', 'naive', 'memgate-60s', 'memgate-1d'] as const;

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
    cases: [...CASES, 'ceiling', 'memgate-60s-uncached', 'memgate-60s-uncorked', 'memgate-1d-uncached'],
  },
  { name: '100,000 features, Zipf', features: 'zipf:100000', cases: CASES },
];

/** Issue 4's targets: a case's throughput over the floor's, same workload and run. */
const TARGETS: { workload: string; case: string; atLeast: number }[] = [
  { workload: 'one hot feature', case: 'memgate-60s', atLeast: 0.9 },
  { workload: '100,000 features, Zipf', case: 'memgate-60s', atLeast: 0.7 },
  { workload: 'one hot feature', case: 'memgate-1d', atLeast: 0.8 },
];

/** One run of one case: autocannon's summary and the server's CPU per answered request. */
interface Run extends LoadSummary {
  readonly cpuMicrosPerRequest: number;
}

export const throughput: Suite = {
  name: 'throughput',
  about:
    'memgate against one-increment floor, rate-limiter-flexible and the naive design, each optimization off in turn',
  estimateSeconds: ({ duration, rounds }) =>
    rounds * WORKLOADS.reduce((sum, w) => sum + w.cases.length, 0) * (duration + 2),

  run: async ({ servers, duration, connections, rounds, progress, doing }) => {
    const runs = new Map<string, Run[]>();
    const key = (workload: string, name: string) => `${workload}|${name}`;
    for (let round = 1; round <= rounds; round++) {
      for (const workload of WORKLOADS) {
        for (const name of workload.cases) {
          doing(`throughput, round ${round}/${rounds}: ${workload.name}, ${name}`);
          const server = await startCase(name, servers);
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

    const rows = WORKLOADS.flatMap((workload) =>
      workload.cases.map((name) => {
        const ratio = rate(workload.name, name) / rate(workload.name, 'floor');
        // Requests per second of server CPU, against the floor's: what a case costs, whoever is the bottleneck.
        const cpuRatio = cpu(workload.name, 'floor') / cpu(workload.name, name);
        const target = TARGETS.find((t) => t.workload === workload.name && t.case === name);
        return [
          workload.name,
          name,
          String(Math.round(rate(workload.name, name))),
          String(p99(workload.name, name)),
          target ? verdict(ratio, target.atLeast, 'at least') : `${ratio.toFixed(2)}×`,
          cpu(workload.name, name).toFixed(1),
          target ? verdict(cpuRatio, target.atLeast, 'at least') : `${cpuRatio.toFixed(2)}×`,
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
          'req per CPU-s vs floor (target)',
          'errors',
        ],
        ...rows,
      ],
      { align: ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r'] },
    );
    const hot = 'one hot feature';
    const peerLine = `memgate-60s against the peer, one hot feature: ${verdict(rate(hot, 'memgate-60s') / rate(hot, 'peer'), 1.3, 'at least')} in req/s, ${verdict(cpu(hot, 'peer') / cpu(hot, 'memgate-60s'), 1.3, 'at least')} in requests per server CPU-second; memgate-60s p99 ${p99(hot, 'memgate-60s')} ms against the floor's ${p99(hot, 'floor')} ms (target ≤ 2×).`;
    const ceilingLine = `The ceiling, the same HTTP route answering without any work, bounds every case on this machine: ${(rate(hot, 'ceiling') / rate(hot, 'floor')).toFixed(2)}× the floor in req/s, ${(cpu(hot, 'floor') / cpu(hot, 'ceiling')).toFixed(2)}× per CPU-second.`;
    const cases = WORKLOADS.flatMap((w) => w.cases).filter((name, i, all) => all.indexOf(name) === i);
    const markdown = `## Throughput

Produced by \`npm run bench -- --suite throughput --duration ${duration} --connections ${connections} --rounds ${rounds}\`.

Each case is the same fastify HTTP stack answering \`GET /check\`, in its own process, loaded by autocannon (${connections} connections, ${duration} s per run) from the bench process, all on one machine with one Memcached. The cases ending in \`-uncached\` or \`-uncorked\` turn one of memgate's optimizations off, to measure what each brings ([design](design.md#what-an-instance-keeps-between-checks)). Every case runs once per round, in turn, and the table shows medians over ${rounds} rounds. Limits are high enough that every request is allowed. "Server CPU µs/req" is the case's server process's CPU time (user and system, from \`/proc\`) over the requests it answered; it does not depend on which process was the bottleneck of a run.

${cases.map((name) => `- **${name}**: ${DESCRIPTIONS[name] ?? name}`).join('\n')}

${table}

${peerLine}

${ceilingLine}
`;
    return { markdown, summary: `${table}\n\n${peerLine}\n${ceilingLine}` };
  },
};
