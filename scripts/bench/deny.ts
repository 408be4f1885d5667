// The path abuse takes: one client far over its limit, answered from memory without
// Memcached, by the memgate service itself (dist/main.js with its logger, metrics and
// overload shedding), beside an empty fastify route, in alternating rounds.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { markdownTable } from 'markdown-table';
import { oneFeature, runLoad } from '../lib/run-load.js';
import { baselineOrWhyNot } from './baseline.js';
import { cpuMicros, startCase, startService, type Measured } from './processes.js';
import { median, verdict, type Suite } from './suite.js';

/** Issue 11's targets for the service's deny path against the empty route. */
const THROUGHPUT_AT_LEAST = 0.8;
const CPU_AT_MOST = 1.3;
/** Issue 24's: a denied lease costs no more than a denied check sent the same way (a JSON body). */
const LEASE_CPU_AT_MOST = 1.0;

interface Run {
  readonly throughput: number;
  readonly p99: number;
  readonly user: number;
  readonly system: number;
  readonly statuses: Readonly<Record<string, number>>;
}

type Asked = 'GET /check' | 'POST /check' | 'POST /lease';

async function measure(
  server: Measured,
  event: string,
  request: Asked,
  connections: number,
  duration: number,
): Promise<Run> {
  const cost = request === 'POST /lease' ? 5 : 1;
  const load = { url: server.url, event, request, cost, connections, nextFeature: oneFeature('abuser') };
  // A first second warms the JIT and fills the denial before anything is counted.
  await runLoad({ ...load, duration: 1 });
  const before = await cpuMicros(server.pid);
  const summary = await runLoad({ ...load, duration });
  const after = await cpuMicros(server.pid);
  const requests = Math.max(1, summary.requests);
  return {
    throughput: summary.throughput,
    p99: summary.latencyMs.p99,
    user: (after.user - before.user) / requests,
    system: (after.system - before.system) / requests,
    statuses: summary.statuses,
  };
}

export const denyPath: Suite = {
  name: 'deny',
  about:
    'the memgate service answering a client far over its limit, against an empty fastify route, CPU per request from /proc',
  // Five processes' runs a round with --baseline's row, four without.
  estimateSeconds: ({ duration, rounds }) => 5 * (rounds + 1) * (duration + 2) + 5,

  run: async ({ servers, duration, connections, rounds, progress, doing, baseline }) => {
    // The A/B row: the service as built at another commit (--baseline; --baseline main compares a change with main).
    const older = baseline === undefined ? undefined : await baselineOrWhyNot(baseline);
    if (older instanceof Error) progress(`deny: no A/B row: ${older.message}`);
    const dir = await mkdtemp(join(tmpdir(), 'memgate-bench-'));
    const policies = join(dir, 'policies.yaml');
    await writeFile(
      policies,
      'events:\n  abuse:\n    limits:\n      - { limit: 1, window: 1h }\n  abuse_leases:\n    limits:\n      - { limit: 1, window: 1h }\n    lease: { maxUnits: 5, life: 5s }\n',
    );
    const empty = await startCase('ceiling', servers);
    const serviceEnv = (prefix: string) => ({
      MEMCACHED_SERVERS: servers,
      MEMGATE_CONFIG: policies,
      MEMGATE_KEY_PREFIX: `${prefix}${process.pid}`,
    });
    const memgate = await startService(serviceEnv('deny'));
    const atBaseline =
      older === undefined || older instanceof Error
        ? undefined
        : await startService(serviceEnv('denyab'), { root: older.root });
    const runs: Record<'empty' | 'memgate' | 'baseline' | 'post' | 'lease', Run[]> = {
      empty: [],
      memgate: [],
      baseline: [],
      post: [],
      lease: [],
    };
    try {
      // One round more than asked, in alternating order, the first of each thrown away as a warm-up.
      for (let round = 0; round <= rounds; round++) {
        for (const [name, server, event, asked] of [
          ['empty', empty, 'bench', 'GET /check'],
          ['memgate', memgate, 'abuse', 'GET /check'],
          ...(atBaseline ? [['baseline', atBaseline, 'abuse', 'GET /check'] as const] : []),
          ['post', memgate, 'abuse', 'POST /check'],
          ['lease', memgate, 'abuse_leases', 'POST /lease'],
        ] as const) {
          doing(`deny, round ${round}/${rounds}${round === 0 ? ' (warm-up)' : ''}: ${name}`);
          const run = await measure(server, event, asked, connections, duration);
          progress(
            `deny, round ${round}/${rounds}${round === 0 ? ' (warm-up)' : ''}: ${name}: ${run.throughput} req/s, ${(run.user + run.system).toFixed(1)} µs CPU/req`,
          );
          if (round > 0) runs[name].push(run);
        }
      }
    } finally {
      await Promise.all([empty.stop(), memgate.stop(), atBaseline?.stop()]);
    }
    const statusesOf = (list: Run[]) => [...new Set(list.flatMap((r) => Object.keys(r.statuses)))].join(', ');
    const row = (name: keyof typeof runs, what: string) => {
      const list = runs[name];
      return [
        what,
        String(Math.round(median(list.map((r) => r.throughput)))),
        String(median(list.map((r) => r.p99))),
        median(list.map((r) => r.user)).toFixed(1),
        median(list.map((r) => r.system)).toFixed(1),
        median(list.map((r) => r.user + r.system)).toFixed(1),
        statusesOf(list),
      ];
    };
    const speed = median(runs.memgate.map((r) => r.throughput)) / median(runs.empty.map((r) => r.throughput));
    const cpu = (name: keyof typeof runs) => median(runs[name].map((r) => r.user + r.system));
    const cost = cpu('memgate') / cpu('empty');
    const leaseCost = cpu('lease') / cpu('post');
    const table = markdownTable(
      [
        ['process', 'req/s (median)', 'p99 ms', 'user µs/req', 'system µs/req', 'CPU µs/req', 'answers'],
        row('empty', 'empty fastify route (`{"allowed":true}`)'),
        row('memgate', 'memgate service, one client far over its limit'),
        ...(atBaseline && older && !(older instanceof Error)
          ? [row('baseline', `memgate service @${older.commit}, the same client (the A/B row)`)]
          : []),
        row('post', 'memgate service, that client checked by `POST /check` (a JSON body)'),
        row('lease', 'memgate service, that client asking for leases (`POST /lease`, 5 units)'),
      ],
      { align: ['l', 'r', 'r', 'r', 'r', 'r', 'l'] },
    );
    const line = `memgate's deny path against the empty route: ${verdict(speed, THROUGHPUT_AT_LEAST, 'at least')} the throughput, ${verdict(cost, CPU_AT_MOST, 'at most')} the CPU per request. A denied lease against a denied check sent as JSON too (\`POST /check\`): ${verdict(leaseCost, LEASE_CPU_AT_MOST, 'at most')} the CPU per request.`;
    const markdown = `## Deny path

Produced by \`npm run bench -- --suite deny --duration ${duration} --connections ${connections} --rounds ${rounds}${baseline === undefined ? '' : ` --baseline ${baseline}`}\`.

A client far over its limit is what abuse looks like, and memgate answers it from memory without asking Memcached. Here the memgate service itself (\`node dist/main.js\`, as \`npm start\` runs it, with its metrics, logger and overload shedding, on Memcached) answers one client over a limit of 1 per hour, by \`GET /check\`, by \`POST /check\` and by \`POST /lease\` (of an event with leases), beside an empty fastify route answering \`{"allowed":true}\` (and, with \`--baseline REF\`, the service as built at that commit answering the same client: \`--baseline main\` compares a change with main), each loaded by autocannon (${connections} connections, ${duration} s per run) in alternating rounds, after a warm-up round each. CPU per request is the process's user and system time from \`/proc\` over the requests it answered; medians over ${rounds} rounds.

${table}

${line}

What brought it from 1.6× to this (same load, CPU per request against the empty route, measured while building it): fastify gets no logger (given one, it makes a child logger and listens for the end of every response, about 5 µs), decision metrics are plain numbers handed to prom-client at each scrape (its \`inc()\` hashes the label object each time, about 1 µs), a repeated denial is one object for as long as it reads the same (a second at most) so its body and headers are built once, the shutdown drain touches the request path only once it has begun, and Ajv compiles without its code optimizer: one schema compiled with it made every request of the process about 9 µs more expensive, even a route without a schema (a bare fastify route: 35 µs, 44 µs once any schema had been compiled, 35 µs with \`code: { optimize: false }\`); the cause is not known.
`;
    return { markdown, summary: `${table}\n\n${line}` };
  },
};
