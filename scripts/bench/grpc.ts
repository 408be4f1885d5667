// Envoy's rate limit service against HTTP /check: the same memgate service (dist/main.js),
// the same limit, features spread and concurrency, decided over GET /check (loaded by
// autocannon) and over gRPC ShouldRateLimit (loaded by lean-grpc.ts, a generator as lean as
// autocannon), in alternating rounds; and, with the same generator, two servers that answer
// ShouldRateLimit with a constant and decide nothing: the transport's floors.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { markdownTable } from 'markdown-table';
import { featureSpread, runLoad } from '../lib/run-load.js';
import { startFloor, type Floor, type FloorServer } from './grpc-floors.js';
import { runLeanGrpcLoad } from './lean-grpc.js';
import { cpuMicros, startGrpcService, type Measured } from './processes.js';
import { median, verdict, type Suite } from './suite.js';

/** Issue 39's target: gRPC's server CPU per decision against HTTP /check's, same service and run. */
const CPU_AT_MOST = 1.3;
/** HTTP/2 connections the gRPC calls share: the load command's default. */
const SESSIONS = 4;
/** High enough that every request is allowed. */
const LIMIT = 1_000_000_000;

const HTTP = 'HTTP /check';
const GRPC = 'gRPC ShouldRateLimit';
/** What answers the load: memgate over either protocol, or a floor over gRPC. */
const FLOOR_ROWS: Readonly<Record<Floor, string>> = {
  'grpc-js': 'gRPC floor: @grpc/grpc-js, constant answer',
  http2: 'gRPC floor: node:http2, constant answer',
  connect: 'gRPC floor: @connectrpc/connect-node, constant answer',
};
type Protocol = typeof HTTP | typeof GRPC | Floor;
const rowName = (protocol: Protocol): string =>
  protocol === HTTP || protocol === GRPC ? protocol : FLOOR_ROWS[protocol];

// The floors decide nothing, so which features the calls name does not matter to them: they run
// with the hot feature only.
const WORKLOADS: readonly { name: string; features: string; protocols: readonly Protocol[] }[] = [
  { name: 'one hot feature', features: 'hot', protocols: [HTTP, GRPC, 'grpc-js', 'http2', 'connect'] },
  { name: '100,000 features, Zipf', features: 'zipf:100000', protocols: [HTTP, GRPC] },
];

interface Run {
  readonly decisionsPerSecond: number;
  readonly p99: number;
  /** The service's CPU (user and system) per decision. */
  readonly serverMicros: number;
  /** The bench process's CPU per decision: the load generator's cost. */
  readonly clientMicros: number;
  readonly errors: number;
}

/** The same limit twice: a memgate event for /check, an Envoy descriptor for ShouldRateLimit. */
async function configuration(): Promise<{ policies: string; envoy: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'memgate-bench-'));
  const policies = join(dir, 'policies.yaml');
  const envoy = join(dir, 'ratelimit.yaml');
  await writeFile(policies, `events:\n  bench:\n    limits:\n      - { limit: ${LIMIT}, window: 60s }\n`);
  // Sliding, as the event's window: the two protocols make the same counting work.
  await writeFile(
    envoy,
    `domain: bench\ndescriptors:\n  - key: client\n    rate_limit: { unit: minute, requests_per_unit: ${LIMIT}, algorithm: sliding }\n`,
  );
  return { policies, envoy };
}

/** Where each protocol's load goes: memgate for /check and ShouldRateLimit, a floor's process otherwise. */
interface Targets {
  readonly service: Measured;
  readonly grpcAddress: string;
  readonly floors: Readonly<Record<Floor, FloorServer>>;
}

async function measure(
  targets: Targets,
  protocol: Protocol,
  options: { features: string; seed: number; connections: number; duration: number },
): Promise<Run> {
  const { connections, duration } = options;
  const nextFeature = featureSpread(options.features, options.seed);
  const server = protocol === HTTP || protocol === GRPC ? targets.service : targets.floors[protocol];
  const before = await cpuMicros(server.pid);
  const own = process.cpuUsage();
  const summary =
    protocol === HTTP
      ? await runLoad({ url: targets.service.url, event: 'bench', connections, duration, nextFeature })
      : await runLeanGrpcLoad({
          address: protocol === GRPC ? targets.grpcAddress : targets.floors[protocol].address,
          domain: 'bench',
          descriptors: [[{ key: 'client', value: '%feature' }]],
          connections,
          sessions: SESSIONS,
          duration,
          nextFeature,
        });
  const client = process.cpuUsage(own);
  const after = await cpuMicros(server.pid);
  const decisions = Math.max(1, summary.requests);
  return {
    decisionsPerSecond: summary.throughput,
    p99: summary.latencyMs.p99,
    serverMicros: (after.user + after.system - before.user - before.system) / decisions,
    clientMicros: (client.user + client.system) / decisions,
    errors: summary.errors,
  };
}

export const grpc: Suite = {
  name: 'grpc',
  about:
    "Envoy's ShouldRateLimit over gRPC against HTTP /check, same service, limit, features and concurrency, with gRPC's transport floors",
  estimateSeconds: ({ duration, rounds }) =>
    (rounds + 1) * WORKLOADS.reduce((sum, w) => sum + w.protocols.length, 0) * (duration + 1) + 10,

  run: async ({ servers, duration, connections, rounds, progress, doing }) => {
    const { policies, envoy } = await configuration();
    const service = await startGrpcService({ servers, policies, envoy, keyPrefix: `grpc${process.pid}` });
    const started: FloorServer[] = [];
    const runs = new Map<string, Run[]>();
    const key = (workload: string, protocol: Protocol) => `${workload}|${protocol}`;
    try {
      const floor = async (name: Floor) => {
        const server = await startFloor(name);
        started.push(server);
        return server;
      };
      const targets: Targets = {
        service,
        grpcAddress: service.grpcAddress,
        floors: { 'grpc-js': await floor('grpc-js'), http2: await floor('http2'), connect: await floor('connect') },
      };
      // One round more than asked, the first thrown away as a warm-up; the order alternates.
      for (let round = 0; round <= rounds; round++) {
        for (const workload of WORKLOADS) {
          for (const protocol of round % 2 === 0 ? workload.protocols : [...workload.protocols].reverse()) {
            const what = `grpc, round ${round}/${rounds}${round === 0 ? ' (warm-up)' : ''}: ${workload.name}, ${rowName(protocol)}`;
            doing(what);
            const run = await measure(targets, protocol, {
              features: workload.features,
              seed: round + 1,
              connections,
              duration,
            });
            progress(
              `${what}: ${run.decisionsPerSecond} answers/s, p99 ${run.p99} ms, ${run.serverMicros.toFixed(1)} µs server CPU and ${run.clientMicros.toFixed(1)} µs load-generator CPU per answer${run.errors > 0 ? `, ${run.errors} errors` : ''}`,
            );
            if (round > 0)
              runs.set(key(workload.name, protocol), [...(runs.get(key(workload.name, protocol)) ?? []), run]);
          }
        }
      }
    } finally {
      await Promise.all([service.stop(), ...started.map((server) => server.stop())]);
    }
    const of = (workload: string, protocol: Protocol) => runs.get(key(workload, protocol)) ?? [];
    const med = (workload: string, protocol: Protocol, field: keyof Run) =>
      median(of(workload, protocol).map((run) => run[field]));
    const vsHttp = (workload: string, protocol: Protocol) =>
      med(workload, protocol, 'decisionsPerSecond') / med(workload, HTTP, 'decisionsPerSecond');
    const cpuVsHttp = (workload: string, protocol: Protocol) =>
      med(workload, protocol, 'serverMicros') / med(workload, HTTP, 'serverMicros');

    const rows = WORKLOADS.flatMap(({ name, protocols }) =>
      protocols.map((protocol) => {
        return [
          name,
          rowName(protocol),
          String(Math.round(med(name, protocol, 'decisionsPerSecond'))),
          `${vsHttp(name, protocol).toFixed(2)}×`,
          String(med(name, protocol, 'p99')),
          med(name, protocol, 'serverMicros').toFixed(1),
          protocol === GRPC
            ? verdict(cpuVsHttp(name, protocol), CPU_AT_MOST, 'at most')
            : `${cpuVsHttp(name, protocol).toFixed(2)}×`,
          med(name, protocol, 'clientMicros').toFixed(1),
          String(of(name, protocol).reduce((sum, run) => sum + run.errors, 0)),
        ];
      }),
    );
    const table = markdownTable(
      [
        [
          'workload',
          'protocol',
          'answers/s (median)',
          'vs HTTP',
          'p99 ms',
          'server CPU µs/answer',
          'server CPU vs HTTP (target)',
          'load generator CPU µs/answer',
          'errors',
        ],
        ...rows,
      ],
      { align: ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'r'] },
    );
    const ratios = WORKLOADS.map(({ name }) => `${name}: ${verdict(cpuVsHttp(name, GRPC), CPU_AT_MOST, 'at most')}`);
    const line = `gRPC ShouldRateLimit against HTTP /check in server CPU per decision, ${ratios.join('; ')}.`;
    const hot = 'one hot feature';
    const floorsLine = `Floors, one hot feature, in server CPU per answer against HTTP /check: a @grpc/grpc-js server that decides nothing ${cpuVsHttp(hot, 'grpc-js').toFixed(2)}×, @connectrpc/connect-node ${cpuVsHttp(hot, 'connect').toFixed(2)}×, node:http2 alone ${cpuVsHttp(hot, 'http2').toFixed(2)}×.`;
    const µs = (protocol: Protocol, field: 'serverMicros' | 'clientMicros') => Math.round(med(hot, protocol, field));
    // The service CPU per decision the target allows.
    const budget = Math.round(med(hot, HTTP, 'serverMicros') * CPU_AT_MOST);
    // How far one row's rounds strayed from its median: the run's noise, shown beside the medians.
    const spread = Math.round(
      100 *
        Math.max(
          ...WORKLOADS.flatMap(({ name, protocols }) =>
            protocols.flatMap((protocol) => {
              const middle = med(name, protocol, 'serverMicros');
              return of(name, protocol).map((run) => Math.abs(run.serverMicros - middle) / middle);
            }),
          ),
        ),
    );
    const aboveFloor = µs(GRPC, 'serverMicros') - µs('http2', 'serverMicros');
    const met = WORKLOADS.every(({ name }) => cpuVsHttp(name, GRPC) <= CPU_AT_MOST);
    const markdown = `## gRPC (Envoy's rate limit service)

Produced by \`npm run bench -- --suite grpc --duration ${duration} --connections ${connections} --rounds ${rounds}\`.

Issue 39 asks that a ShouldRateLimit decision cost the service at most ${CPU_AT_MOST}× the CPU of an HTTP \`/check\` of the same limit, same run. One memgate service (\`node dist/main.js\`, as \`npm start\` runs it, on Memcached, with \`MEMGATE_GRPC_PORT\` and \`MEMGATE_ENVOY_CONFIG\`) decides the same limit (60 s sliding window, high enough that every request is allowed) two ways: \`GET /check?event=bench&feature=F\` loaded by autocannon, and \`ShouldRateLimit\` with one descriptor \`client=F\` loaded by the bench's own lean generator (\`scripts/bench/lean-grpc.ts\`: node:http2, ${connections} calls in flight over ${SESSIONS} HTTP/2 connections, each request a gRPC frame encoded once per feature with protobufjs, each answer read for its \`grpc-status\` and the one varint of \`overall_code\`, one answer in 1,000 decoded whole to check that reading). A full @grpc/grpc-js client, which \`npm run load -- --grpc HOST:PORT\` keeps, spends about 350 µs of CPU per call against autocannon's 50, on the 2 cores the service uses too; it would measure the clients as much as memgate.

memgate serves gRPC on node:http2's stream API, requests decoded by proto-loader and ShouldRateLimit's answers written by hand (\`src/grpc/server.ts\`, \`src/grpc/response-encoder.ts\`). Three floors, the candidate transports, are loaded by the same generator with the same concurrency, one hot feature, each answering every call with the constant response memgate gives here (\`scripts/bench/grpc-floor-server.mjs\`): a @grpc/grpc-js server with memgate's proto-loader options (memgate's transport until issue 39), @connectrpc/connect-node with protobuf-es's generated messages (\`scripts/bench/connect-floor/\`), both decoding each request and encoding each answer, and node:http2 answering gRPC by hand with the same pre-encoded bytes. Neither decides anything: what they cost is the transport's share. Every protocol runs once per round, the order reversed every other round, after a warm-up round; medians over ${rounds} rounds. CPU per answer is the serving process's user and system time from \`/proc\` over the calls it answered, and the bench process's own, which generates the load, over the same. The machine is shared and noisy: in this run one row's rounds strayed up to ${spread}% from its median in server CPU per answer.

${table}

${line}

${floorsLine}

What the figures say, one hot feature. ${met ? 'The target is met in this run.' : 'The target is not met in this run.'} It allows a call ${budget} µs of the service's CPU; memgate's costs ${µs(GRPC, 'serverMicros')}, node:http2 answering a constant ${µs('http2', 'serverMicros')}, @connectrpc/connect-node ${µs('connect', 'serverMicros')} and @grpc/grpc-js ${µs('grpc-js', 'serverMicros')}, all deciding nothing: memgate serves on node:http2 itself, the cheapest. About ${aboveFloor} µs of memgate's call are above node:http2's floor: scanning and decoding the request, matching the descriptor, deciding as \`/check\` does, and building and encoding the answer's statuses and headers. Decisions per second are not the measure: the generator's Node HTTP/2 client spends ${µs(GRPC, 'clientMicros')} µs per call against autocannon's ${µs(HTTP, 'clientMicros')} per request, and on 2 cores that CPU is taken from the service. In production the caller is Envoy, whose C++ client costs memgate's machine nothing.
`;
    return { markdown, summary: `${table}\n\n${line}\n${floorsLine}` };
  },
};
