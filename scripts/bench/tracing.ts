// What tracing costs /check: the memgate service (dist/main.js) with tracing off against the
// build before tracing existed, and with tracing on (every request sampled, spans sent over
// OTLP to a collector in this process that reads and drops them) against off, in alternating
// rounds on one hot client.
import { createServer } from 'node:http';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { markdownTable } from 'markdown-table';
import { oneFeature, runLoad } from '../lib/run-load.js';
import { baselineBuild } from './baseline.js';
import { cpuMicros, startService, type Measured } from './processes.js';
import { median, type Suite } from './suite.js';

/** The build before tracing: what "off" must cost no more than. */
const BEFORE_TRACING = '1efb8e6';

interface Run {
  readonly throughput: number;
  readonly p99: number;
  readonly cpu: number;
}

/** An OTLP/HTTP collector that reads every export and answers it, keeping only a count of the bytes. */
async function sinkCollector(): Promise<{ url: string; bytes: () => number; close: () => Promise<void> }> {
  let bytes = 0;
  const server = createServer((request, response) => {
    request.on('data', (chunk: Buffer) => (bytes += chunk.length));
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    bytes: () => bytes,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      }),
  };
}

async function measure(server: Measured, connections: number, duration: number): Promise<Run> {
  const load = { url: server.url, event: 'bench', connections, nextFeature: oneFeature('hot') };
  await runLoad({ ...load, duration: 1 });
  const before = await cpuMicros(server.pid);
  const summary = await runLoad({ ...load, duration });
  const after = await cpuMicros(server.pid);
  const used = after.user + after.system - before.user - before.system;
  return { throughput: summary.throughput, p99: summary.latencyMs.p99, cpu: used / Math.max(1, summary.requests) };
}

export const tracing: Suite = {
  name: 'tracing',
  about: `/check by the memgate service with tracing off against ${BEFORE_TRACING} (before tracing) and with tracing on (OTLP)`,
  estimateSeconds: ({ duration, rounds }) => 3 * (rounds + 1) * (duration + 3) + 30,

  run: async ({ servers, duration, connections, rounds, progress, doing, baseline }) => {
    const ref = baseline ?? BEFORE_TRACING;
    doing(`tracing: building ${ref}`);
    const older = await baselineBuild(ref);
    const dir = await mkdtemp(join(tmpdir(), 'memgate-bench-'));
    const policies = join(dir, 'policies.yaml');
    await writeFile(policies, 'events:\n  bench:\n    limits:\n      - { limit: 1000000000, window: 60s }\n');
    const collector = await sinkCollector();
    const env = { MEMCACHED_SERVERS: servers, MEMGATE_CONFIG: policies, MEMGATE_USAGE_DB: 'off' };
    const cases = [
      {
        name: 'before',
        what: `tracing not built yet (${older.commit.slice(0, 7)})`,
        start: () => startService({ ...env, MEMGATE_KEY_PREFIX: `tb${process.pid}` }, { root: older.root }),
      },
      {
        name: 'off',
        what: 'tracing off (this build)',
        start: () => startService({ ...env, MEMGATE_KEY_PREFIX: `to${process.pid}` }),
      },
      {
        name: 'on',
        what: 'tracing on: every request sampled, OTLP http/protobuf to a local collector',
        start: () =>
          startService({ ...env, MEMGATE_KEY_PREFIX: `tn${process.pid}`, OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }),
      },
    ] as const;
    const runs = new Map<string, Run[]>(cases.map(({ name }) => [name, []]));
    const started = await Promise.all(cases.map(({ start }) => start()));
    try {
      // One round more than asked, the first a warm-up; the order reversed every other round.
      for (let round = 0; round <= rounds; round++) {
        const order = round % 2 === 0 ? [0, 1, 2] : [2, 1, 0];
        for (const index of order) {
          const { name } = cases[index] as (typeof cases)[number];
          doing(`tracing, round ${round}/${rounds}${round === 0 ? ' (warm-up)' : ''}: ${name}`);
          const run = await measure(started[index] as Measured, connections, duration);
          progress(
            `tracing, round ${round}/${rounds}${round === 0 ? ' (warm-up)' : ''}: ${name}: ${run.throughput} req/s, p99 ${run.p99} ms, ${run.cpu.toFixed(1)} µs CPU/req`,
          );
          if (round > 0) runs.get(name)?.push(run);
        }
      }
    } finally {
      await Promise.all(started.map((server) => server.stop()));
      await collector.close();
    }
    const of = (name: string) => runs.get(name) ?? [];
    const cpu = (name: string) => median(of(name).map((r) => r.cpu));
    const rate = (name: string) => median(of(name).map((r) => r.throughput));
    const spread = (name: string) => {
      const values = of(name).map((r) => r.cpu);
      return `${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)}`;
    };
    const table = markdownTable(
      [
        [
          'memgate service',
          'req/s (median)',
          'p99 ms',
          'CPU µs/req (median)',
          'CPU µs/req (rounds)',
          'CPU/req vs before',
        ],
        ...cases.map(({ name, what }) => [
          what,
          String(Math.round(rate(name))),
          String(median(of(name).map((r) => r.p99))),
          cpu(name).toFixed(1),
          spread(name),
          `${(cpu(name) / cpu('before')).toFixed(2)}×`,
        ]),
      ],
      { align: ['l', 'r', 'r', 'r', 'r', 'r'] },
    );
    const line = `Tracing off against ${older.commit.slice(0, 7)}: ${(cpu('off') / cpu('before')).toFixed(2)}× the CPU per request, ${(rate('off') / rate('before')).toFixed(2)}× the throughput. Tracing on against off: ${(cpu('on') / cpu('off')).toFixed(2)}× the CPU per request (${(cpu('on') - cpu('off')).toFixed(1)} µs more), ${(rate('on') / rate('off')).toFixed(2)}× the throughput; the collector received ${Math.round(collector.bytes() / 1024)} KiB of spans.`;
    const markdown = `## Tracing off

Produced by \`npm run bench -- --suite tracing --duration ${duration} --connections ${connections} --rounds ${rounds}\`${baseline === undefined ? '' : ` (\`--baseline ${baseline}\`)`}.

Issue 39 asks that tracing, when off, cost the hot path nothing measurable. Three memgate services (\`node dist/main.js\`, as \`npm start\` runs it, on Memcached, without usage history) answer \`GET /check\` for one hot client under a limit high enough that every request is allowed: the build before tracing (${older.commit.slice(0, 7)}, \`--baseline\` names another), this build with tracing off, and this build with tracing on (\`OTEL_EXPORTER_OTLP_ENDPOINT\` to a collector in the bench process that reads each export and drops it; every request sampled, a server span and its store call's span each). Each is loaded by autocannon (${connections} connections, ${duration} s per run) in turn, the order reversed every other round, after a warm-up round and 1 s of load that is not measured; CPU per request is the serving process's user and system time from \`/proc\` over the requests it answered; medians over ${rounds} rounds, with each row's spread.

${table}

${line}
`;
    return { markdown, summary: `${table}\n\n${line}` };
  },
};
