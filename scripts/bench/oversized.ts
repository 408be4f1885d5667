// The largest requests memgate refuses, sent in a flood by one client, while another checks
// /check at a steady pace: what each flood costs the service per request, and how far it moves
// the checker's latency. Issue 24: refused before the bulk of the work, so /check's p99 moves
// by less than 2x.
import { connect, type ClientHttp2Session } from 'node:http2';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { markdownTable } from 'markdown-table';
import { Agent, request } from 'undici';
import { grpcFrame, rateLimitMessages, SHOULD_RATE_LIMIT_PATH } from './lean-grpc.js';
import { cpuMicros, startGrpcService, type Measured } from './processes.js';
import { median, verdict, type Suite } from './suite.js';

/** How far a flood may move /check's p99 (issue 24). */
const P99_AT_MOST = 2;
/**
 * The flood's pace: one client sending one request after another, this many a second (the
 * outside tester's stream sent 4 to 6 a second of its largest requests).
 */
const FLOOD_PER_SECOND = 20;
/** The checker's pace. */
const PROBE_EVERY_MS = 10;

interface Flood {
  readonly name: string;
  /** What memgate answers it, as the table says. */
  readonly answer: string;
  readonly send: (targets: Targets) => Promise<string>;
}

interface Targets {
  readonly service: Measured;
  readonly http: Agent;
  /** The HTTP/2 connection to the gRPC port, opened again when memgate closes it. */
  grpc(): ClientHttp2Session;
}

function encodedRequest(descriptors: { key: string; value: string }[][]): Buffer {
  const { request: type } = rateLimitMessages();
  const message = type.fromObject({ domain: 'edge', descriptors: descriptors.map((entries) => ({ entries })) });
  return grpcFrame(type.encode(message).finish());
}

/** A gRPC call of `frame`; resolves with its grpc-status. */
function grpcCall(session: ClientHttp2Session, frame: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ':method': 'POST',
      ':path': SHOULD_RATE_LIMIT_PATH,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    let status = '';
    stream.on('response', (headers) => {
      status = String(headers['grpc-status'] ?? status);
    });
    stream.on('trailers', (trailers: Record<string, string | undefined>) => {
      status = trailers['grpc-status'] ?? status;
    });
    stream.on('data', () => undefined);
    stream.on('end', () => {
      resolve(`grpc-status ${status}`);
    });
    stream.on('error', reject);
    stream.end(frame);
  });
}

async function httpCall(targets: Targets, path: string, body: Buffer): Promise<string> {
  const response = await request(new URL(path, targets.service.url), {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json' },
    dispatcher: targets.http,
  }).catch((error: unknown) => ({ statusCode: (error as Error).message, body: undefined }));
  await response.body?.dump();
  return `HTTP ${String(response.statusCode)}`;
}

/** Built when the suite runs: encoding 110,000 descriptors takes a moment. */
function buildFloods(): Flood[] {
  // As many descriptors as fit in the 64 KB a message may be.
  const tinyDescriptors = encodedRequest(Array.from({ length: 7000 }, () => [{ key: 'a', value: '' }]));
  const bigMessage = encodedRequest(Array.from({ length: 110_000 }, () => [{ key: 'a', value: 'b' }]));
  // Each as large as a batch may be (256 KB), but the last, which is over it.
  const nestedBatch = Buffer.from(`${'['.repeat(125_000)}${']'.repeat(125_000)}`);
  const overLimitBatch = Buffer.from(`[${'['.repeat(700_000)}${']'.repeat(700_000)}]`);
  const manyValues = Buffer.from(JSON.stringify(Array(100_000).fill(0)));
  // 100 checks, each feature 1,100 quotes (2.2 KB escaped): parsed, then each refused.
  const longFeatures = Buffer.from(
    JSON.stringify(Array.from({ length: 100 }, () => ({ event: 'api', feature: '"'.repeat(1100) }))),
  );

  return [
    {
      name: `gRPC, ${Math.round(tinyDescriptors.length / 1024)} KB: 7,000 descriptors`,
      answer: 'INVALID_ARGUMENT',
      send: (t) => grpcCall(t.grpc(), tinyDescriptors),
    },
    {
      name: `gRPC, ${Math.round(bigMessage.length / 1024)} KB: 110,000 descriptors`,
      answer: 'RESOURCE_EXHAUSTED',
      send: (t) => grpcCall(t.grpc(), bigMessage),
    },
    {
      name: `/check/batch, ${Math.round(nestedBatch.length / 1024)} KB of nested arrays`,
      answer: '400 invalid_request',
      send: (t) => httpCall(t, '/check/batch', nestedBatch),
    },
    {
      name: `/check/batch, ${Math.round(manyValues.length / 1024)} KB: 100,000 values`,
      answer: '413',
      send: (t) => httpCall(t, '/check/batch', manyValues),
    },
    {
      name: `/check/batch, ${Math.round(longFeatures.length / 1024)} KB: 100 features over 1 KB`,
      answer: '200, each item feature_too_long',
      send: (t) => httpCall(t, '/check/batch', longFeatures),
    },
    {
      name: `/check/batch, ${Math.round(overLimitBatch.length / 1024)} KB`,
      answer: '413',
      send: (t) => httpCall(t, '/check/batch', overLimitBatch),
    },
  ];
}

/** Cases of the table: no flood, then each flood. */
const FLOOD_COUNT = 6;

/** GET /check every PROBE_EVERY_MS until `until` resolves; each answer's latency in ms. */
async function probe(service: Measured, until: Promise<unknown>): Promise<number[]> {
  const agent = new Agent({ connections: 1 });
  const latencies: number[] = [];
  const state = { done: false };
  void until.finally(() => {
    state.done = true;
  });
  try {
    let i = 0;
    while (!state.done) {
      const started = performance.now();
      const response = await request(new URL(`/check?event=probe&feature=p${i++ % 50}`, service.url), {
        dispatcher: agent,
      });
      await response.body.dump();
      latencies.push(performance.now() - started);
      await sleep(Math.max(0, PROBE_EVERY_MS - (performance.now() - started)));
    }
  } finally {
    await agent.close();
  }
  return latencies;
}

const percentile = (values: readonly number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};

interface Measurement {
  readonly p99: number;
  readonly max: number;
  readonly sent: number;
  readonly answers: string;
  /** The service's CPU over the run, and the probes it answered meanwhile. */
  readonly cpuMicros: number;
  readonly probes: number;
}

async function measure(targets: Targets, flood: Flood | undefined, seconds: number): Promise<Measurement> {
  const before = await cpuMicros(targets.service.pid);
  const deadline = performance.now() + seconds * 1000;
  const answers = new Map<string, number>();
  let sent = 0;
  const sender = async () => {
    for (let next = performance.now(); flood && next < deadline; next += 1000 / FLOOD_PER_SECOND) {
      await sleep(Math.max(0, next - performance.now()));
      const answer = await flood.send(targets).catch((error: unknown) => (error as Error).message);
      answers.set(answer, (answers.get(answer) ?? 0) + 1);
      sent++;
    }
  };
  const flooding = flood ? sender() : sleep(seconds * 1000);
  const latencies = await probe(targets.service, flooding);
  await flooding;
  const after = await cpuMicros(targets.service.pid);
  const cpu = after.user + after.system - before.user - before.system;
  return {
    p99: percentile(latencies, 99),
    max: Math.max(...latencies),
    sent,
    answers: [...answers].map(([answer, count]) => `${answer} ×${count}`).join(', '),
    cpuMicros: cpu,
    probes: latencies.length,
  };
}

export const oversized: Suite = {
  name: 'oversized',
  about: 'floods of the largest refused requests (gRPC and HTTP) from one client, against /check probed every 10 ms',
  estimateSeconds: ({ duration, rounds }) => rounds * (FLOOD_COUNT + 1) * (duration + 0.5) + 5,

  run: async ({ servers, duration, rounds, progress, doing }) => {
    const dir = await mkdtemp(join(tmpdir(), 'memgate-bench-'));
    const policies = join(dir, 'policies.yaml');
    const envoy = join(dir, 'envoy.yaml');
    await writeFile(
      policies,
      'events:\n  api:\n    limits:\n      - { limit: 100, window: 1m }\n  probe:\n    limits:\n      - { limit: 1000000, window: 1m }\n',
    );
    await writeFile(
      envoy,
      'domain: edge\ndescriptors:\n  - key: a\n    rate_limit: { unit: hour, requests_per_unit: 10 }\n',
    );
    const service = await startGrpcService({ servers, policies, envoy, keyPrefix: `oversized${process.pid}` });
    const http = new Agent({ connections: 1 });
    let session: ClientHttp2Session | undefined;
    const grpc = () => {
      if (session === undefined || session.closed || session.destroyed) {
        session = connect(`http://${service.grpcAddress}`);
        session.on('error', () => undefined);
      }
      return session;
    };
    const targets: Targets = { service, http, grpc };
    const runs = new Map<string, Measurement[]>();
    const cases: (Flood | undefined)[] = [undefined, ...buildFloods()];
    try {
      for (let round = 1; round <= rounds; round++) {
        for (const flood of cases) {
          const name = flood?.name ?? 'none';
          doing(`oversized, round ${round}/${rounds}: ${name}`);
          const run = await measure(targets, flood, duration);
          progress(
            `oversized, round ${round}/${rounds}: ${name}: /check p99 ${run.p99.toFixed(1)} ms, max ${run.max.toFixed(1)} ms${flood ? `, ${run.sent} sent (${run.answers})` : ''}`,
          );
          runs.set(name, [...(runs.get(name) ?? []), run]);
        }
      }
    } finally {
      session?.close();
      await http.close();
      await service.stop();
    }
    const quiet = runs.get('none') ?? [];
    const alone = median(quiet.map((r) => r.p99));
    // A flood request's CPU: the run's, less what its probes cost in the runs without a flood.
    const perProbe = median(quiet.map((r) => r.cpuMicros / Math.max(1, r.probes)));
    const perFloodRequest = (r: Measurement) => Math.max(0, r.cpuMicros - r.probes * perProbe) / Math.max(1, r.sent);
    let worst = 0;
    const rows = cases.map((flood) => {
      const list = runs.get(flood?.name ?? 'none') ?? [];
      const p99 = median(list.map((r) => r.p99));
      if (flood) worst = Math.max(worst, p99 / alone);
      return [
        flood?.name ?? 'no flood',
        flood?.answer ?? '–',
        flood ? String(Math.round(median(list.map((r) => r.sent)) / duration)) : '–',
        flood ? String(Math.round(median(list.map(perFloodRequest)))) : `${Math.round(perProbe)} per probe`,
        p99.toFixed(1),
        median(list.map((r) => r.max)).toFixed(1),
        flood ? `${(p99 / alone).toFixed(2)}×` : '1.00×',
      ];
    });
    const table = markdownTable(
      [
        [
          'flood from one client',
          'answered',
          'requests/s',
          'server CPU µs/request',
          '/check p99 ms',
          '/check max ms',
          'p99 vs no flood',
        ],
        ...rows,
      ],
      { align: ['l', 'l', 'r', 'r', 'r', 'r', 'r'] },
    );
    const line = `The worst flood moved /check's p99 ${verdict(worst, P99_AT_MOST, 'at most')}.`;
    const markdown = `## Oversized requests

Produced by \`npm run bench -- --suite oversized --duration ${duration} --rounds ${rounds}\`.

The memgate service (\`node dist/main.js\`, on Memcached, with its gRPC port) is checked by one client with \`GET /check\` every ${PROBE_EVERY_MS} ms, one request at a time, while another client sends the largest requests memgate refuses, one after another, ${FLOOD_PER_SECOND} a second (the outside tester's stream sent 4 to 6), for ${duration} s per flood; medians over ${rounds} rounds. Every size is refused before the bulk of the work: a gRPC message over 64 KB by grpc-js on its length prefix, counts and lengths by a walk over the message's bytes before it is decoded (\`src/grpc/wire-scan.ts\`), a body over its route's limit by its length, and JSON nested or holding more values than any request by one pass over the bytes before \`JSON.parse\` (\`src/http/json-body.ts\`). Server CPU is the service's user and system time from \`/proc\` over a run, less what the probes cost in the runs without a flood, over the flood's requests.

${table}

${line}
`;
    return { markdown, summary: `${table}\n\n${line}` };
  },
};
