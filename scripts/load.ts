// Load-tests a memgate deployment, its HTTP /check with autocannon or its Envoy rate limit
// service (gRPC ShouldRateLimit) with @grpc/grpc-js, and reports throughput, latency,
// decisions and why requests failed.
//   npm run load -- --url http://127.0.0.1:8080 --event login --features zipf:10000
//   npm run load -- --grpc 127.0.0.1:8081 --domain edge --descriptor remote_address=%feature --features zipf:10000
import { markdownTable } from 'markdown-table';
import { EXIT, runCommand, type ExitCode } from '../src/commands/command-line.js';
import { descriptorFlag, descriptorText, grpcAddress } from './lib/grpc-load-flags.js';
import { progressIntervalMs, startProgress, type Progress } from './lib/progress.js';
import { CALL_DEADLINE_SECONDS, runGrpcLoad, usesFeature, type GrpcLoadSummary } from './lib/run-grpc-load.js';
import { FAILURE_KINDS, featureSpread, runLoad, type FeatureSpread, type LoadSummary } from './lib/run-load.js';

/** Measured on 2 cores: 50 calls in flight over 4 HTTP/2 connections beat 1 by about half (see scripts/lib/run-grpc-load.ts). */
const DEFAULT_CHANNELS = 4;

const USAGE = `usage: npm run load -- --url URL --event EVENT [options]
       npm run load -- --grpc HOST:PORT --domain DOMAIN --descriptor K=V[,K=V...] [options]

HTTP /check:
  --url URL           the memgate to load, e.g. http://127.0.0.1:8080
  --event EVENT       an event of its policy file
  --cost N            cost of each request (default 1)

Envoy's rate limit service (gRPC ShouldRateLimit, as Envoy's ratelimit filter calls it):
  --grpc HOST:PORT    memgate's gRPC address (MEMGATE_GRPC_PORT), e.g. 127.0.0.1:8081
  --domain DOMAIN     the request's domain, a domain of MEMGATE_ENVOY_CONFIG
  --descriptor K=V,.. one descriptor, its entries in order; repeat it for several
                      descriptors in one request. %feature in a value is the client
                      --features picks, e.g. --descriptor remote_address=%feature
  --cost N            the request's hits_addend (default 1)
  --channels N        HTTP/2 connections the calls share (default ${DEFAULT_CHANNELS}; at most
                      --connections)

Either:
  --connections N     concurrent connections; with --grpc, calls in flight at once
                      (default 50; at most --requests)
  --duration S        seconds to run (default 10), or
  --requests N        stop after N requests instead
  --features SPREAD   whose requests: hot (one client, the default), zipf:N (N clients,
                      Zipf 1.1 popularity) or uniform:N (N clients, equally often)
  --seed N            seed of the feature spread (default 1)
  --json              print the result as JSON on standard output

Prints throughput, latency, answers by status (gRPC: by overall_code, OK or OVER_LIMIT)
and requests that got no answer by kind (connection refused, reset, timeout, ...; gRPC:
failed calls by status, UNAVAILABLE, INVALID_ARGUMENT, DEADLINE_EXCEEDED after
${CALL_DEADLINE_SECONDS} s, ...). Exits 0 when every request was answered 200 or 429 (OK or
OVER_LIMIT), 1 when any failed, 2 for bad usage. Progress goes to standard error.`;

runCommand(
  {
    name: 'load',
    usage: USAGE,
    options: {
      url: { type: 'string' },
      event: { type: 'string' },
      grpc: { type: 'string' },
      domain: { type: 'string' },
      descriptor: { type: 'string', multiple: true },
      channels: { type: 'string' },
      connections: { type: 'string' },
      duration: { type: 'string' },
      requests: { type: 'string' },
      features: { type: 'string' },
      cost: { type: 'string' },
      seed: { type: 'string' },
      json: { type: 'boolean' },
    },
  },
  async ({ values, fail, positiveInteger }) => {
    if (values.grpc !== undefined) {
      if (values.url !== undefined) fail("give --url (HTTP /check) or --grpc (Envoy's ShouldRateLimit), not both");
      if (values.event !== undefined) fail('--event is for HTTP /check; with --grpc, give --domain and --descriptor');
      const address = grpcAddress(values.grpc);
      const domain = values.domain ?? fail('--domain is required with --grpc');
      if (domain === '') fail('--domain must not be empty');
      const descriptors = (values.descriptor ?? fail('--descriptor is required with --grpc')).map(descriptorFlag);
      if (values.features !== undefined && !usesFeature(descriptors))
        fail(`--features spreads %feature, which no --descriptor value holds (e.g. --descriptor key=%feature)`);
      const common = commonFlags(values, { fail, positiveInteger });
      const channels = Math.min(positiveInteger(values.channels, 'channels', DEFAULT_CHANNELS), common.connections);
      return loadGrpc({ ...common, address, domain, descriptors, channels, json: values.json === true });
    }
    for (const flag of ['domain', 'descriptor', 'channels'] as const)
      if (values[flag] !== undefined) fail(`--${flag} is for --grpc HOST:PORT (Envoy's ShouldRateLimit)`);
    const url = values.url ?? fail('--url is required');
    const event = values.event ?? fail('--event is required');
    const base = httpUrl(url) ?? fail(`--url must be an http URL (got ${JSON.stringify(url)})`);
    const { requests, duration, connections, cost, spread, nextFeature, everyMs } = commonFlags(values, {
      fail,
      positiveInteger,
    });

    const { progress, onTick } = loadProgress({ requests, duration, everyMs });
    let summary: LoadSummary;
    try {
      summary = await runLoad({
        url: base,
        event,
        connections,
        ...(requests === undefined ? { duration } : { requests }),
        cost,
        nextFeature,
        onTick,
      });
      progress.done();
    } finally {
      progress.stop();
    }
    const origin = base.origin;
    if (values.json) {
      console.log(JSON.stringify({ url: origin, event, features: spread, connections, ...summary }, null, 2));
    } else {
      console.log(summaryText(summary));
      console.log(
        `${connections} connections for ${summary.seconds.toFixed(1)} s against ${origin} (event ${event}, features ${spread}); latency in whole milliseconds, as autocannon records it`,
      );
    }
    if (summary.errors === 0) return EXIT.ok;
    const attempted = summary.requests + noAnswer(summary);
    console.error(
      summary.errors === attempted
        ? `load: every request failed: ${failureText(summary)}${summary.requests === 0 ? `; is memgate listening at ${origin}?` : ''}`
        : `load: ${count(summary.errors)} of ${count(attempted)} requests failed: ${failureText(summary)}`,
    );
    return EXIT.failed;
  },
);

type Values = Partial<Record<'duration' | 'requests' | 'connections' | 'cost' | 'features' | 'seed', string>>;
type Refusers = {
  fail: (message: string) => never;
  positiveInteger: (t: string | undefined, o: string, f: number) => number;
};

/** The flags both modes read the same way: how long, how many at once, whose requests. */
function commonFlags(values: Values, { fail, positiveInteger }: Refusers) {
  if (values.requests !== undefined && values.duration !== undefined) fail('give --duration or --requests, not both');
  const requests = values.requests === undefined ? undefined : positiveInteger(values.requests, 'requests', 1);
  const duration = positiveInteger(values.duration, 'duration', 10);
  // autocannon cannot spread fewer requests than connections; nor is there a call for more.
  const connections = Math.min(positiveInteger(values.connections, 'connections', 50), requests ?? Infinity);
  const cost = positiveInteger(values.cost, 'cost', 1);
  const spread = values.features ?? 'hot';
  const seed = positiveInteger(values.seed, 'seed', 1);
  let nextFeature: FeatureSpread;
  try {
    nextFeature = featureSpread(spread, seed);
  } catch (error) {
    return fail((error as Error).message);
  }
  return { requests, duration, connections, cost, spread, nextFeature, everyMs: progressIntervalMs() };
}

/** Progress in seconds for a --duration run, in requests for a --requests one, and what updates it. */
function loadProgress({
  requests,
  duration,
  everyMs,
}: {
  requests: number | undefined;
  duration: number;
  everyMs: number;
}): {
  progress: Progress;
  onTick: (done: number) => void;
} {
  const progress =
    requests === undefined
      ? startProgress({ label: 'load', total: duration, describe: (done, total) => `${done} of ${total} s`, everyMs })
      : startProgress({
          label: 'load',
          total: requests,
          describe: (done, total) => `${done.toLocaleString('en')} of ${total.toLocaleString('en')} requests`,
          everyMs,
        });
  const started = performance.now();
  return {
    progress,
    onTick: (done) => {
      const seconds = Math.min(duration, Math.round((performance.now() - started) / 1000));
      progress.update(requests === undefined ? seconds : done, `${done.toLocaleString('en')} done`);
    },
  };
}

interface GrpcRun extends ReturnType<typeof commonFlags> {
  readonly address: string;
  readonly domain: string;
  readonly descriptors: ReturnType<typeof descriptorFlag>[];
  readonly channels: number;
  readonly json: boolean;
}

async function loadGrpc(run: GrpcRun): Promise<ExitCode> {
  const { address, domain, descriptors, connections, channels, requests, duration, spread } = run;
  const { progress, onTick } = loadProgress(run);
  let summary: GrpcLoadSummary;
  try {
    summary = await runGrpcLoad({
      address,
      domain,
      descriptors,
      connections,
      channels,
      ...(requests === undefined ? { duration } : { requests }),
      hitsAddend: run.cost,
      nextFeature: run.nextFeature,
      onTick,
    });
    progress.done();
  } finally {
    progress.stop();
  }
  const described = descriptors.map((d) => `--descriptor ${descriptorText(d)}`).join(' ');
  if (run.json) {
    console.log(
      JSON.stringify(
        {
          address,
          domain,
          descriptors: descriptors.map(descriptorText),
          features: spread,
          connections,
          channels,
          ...summary,
        },
        null,
        2,
      ),
    );
  } else {
    console.log(grpcSummaryText(summary));
    console.log(
      `${connections} calls in flight over ${channels} HTTP/2 connection${channels === 1 ? '' : 's'} for ${summary.seconds.toFixed(1)} s against ${address} (domain ${domain}, ${described}, features ${spread})`,
    );
  }
  if (summary.errors === 0) return EXIT.ok;
  const attempted = summary.requests + noAnswer(summary);
  console.error(
    summary.errors === attempted
      ? `load: every call failed: ${grpcFailureText(summary)}${unreached(summary) ? `; is memgate's gRPC server (MEMGATE_GRPC_PORT) listening at ${address}?` : ''}`
      : `load: ${count(summary.errors)} of ${count(attempted)} calls failed: ${grpcFailureText(summary)}`,
  );
  return EXIT.failed;
}

/** No call reached a server: every one failed UNAVAILABLE (a server's own refusals have other statuses). */
const unreached = (summary: GrpcLoadSummary) =>
  summary.requests === 0 && Object.keys(summary.failures).every((status) => status === 'UNAVAILABLE');

/** `12 UNAVAILABLE (No connection established…), 3 answered UNKNOWN`: what went wrong, most frequent first. */
function grpcFailureText(summary: GrpcLoadSummary): string {
  const failed = Object.entries(summary.failures).map(
    ([status, n]) => [n, `${count(n)} ${status}${detail(summary.failureDetails[status])}`] as const,
  );
  const codes = Object.entries(summary.codes)
    .filter(([code]) => code !== 'OK' && code !== 'OVER_LIMIT')
    .map(([code, n]) => [n, `${count(n)} answered ${code}`] as const);
  return [...failed, ...codes]
    .sort((a, b) => b[0] - a[0])
    .map(([, text]) => text)
    .join(', ');
}

/** The server's reason, on one line and short: grpc-js's UNAVAILABLE details run long. */
function detail(text: string | undefined): string {
  // grpc-js ends UNAVAILABLE's details with "Resolution note:" and nothing after it.
  const line = (text ?? '')
    .replace(/\s+/g, ' ')
    .replace(/ Resolution note:\s*$/, '')
    .trim();
  if (line === '') return '';
  return ` (${line.length > 120 ? `${line.slice(0, 119)}…` : line})`;
}

function grpcSummaryText(summary: GrpcLoadSummary): string {
  const table = markdownTable(
    [
      ['answered', 'per second', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'OK', 'OVER_LIMIT', 'failed'],
      [
        count(summary.requests),
        count(summary.throughput),
        ...[summary.latencyMs.p50, summary.latencyMs.p90, summary.latencyMs.p99, summary.latencyMs.max].map((ms) =>
          ms.toFixed(2),
        ),
        count(summary.allowed),
        count(summary.denied),
        count(summary.errors),
      ],
    ],
    { align: 'r' },
  );
  const codes = Object.entries(summary.codes).map(([code, n]) => `${code}: ${count(n)}`);
  const failures = Object.entries(summary.failures).map(
    ([status, n]) => `${status}: ${count(n)}${detail(summary.failureDetails[status])}`,
  );
  return [
    table,
    `answers by code: ${codes.join(', ') || 'none'}`,
    ...(failures.length > 0 ? [`failed calls: ${failures.join(', ')}`] : []),
  ].join('\n');
}

function httpUrl(text: string): URL | undefined {
  const url = URL.canParse(text) ? new URL(text) : undefined;
  return url?.protocol === 'http:' || url?.protocol === 'https:' ? url : undefined;
}

const noAnswer = (summary: { failures: Readonly<Record<string, number>> }) =>
  Object.values(summary.failures).reduce((sum, n) => sum + n, 0);
const count = (n: number) => n.toLocaleString('en');

/** `20 connection refused (ECONNREFUSED), 3 answered 503`: what went wrong, most frequent first. */
function failureText(summary: LoadSummary): string {
  const failed = Object.entries(summary.failures).map(
    ([kind, n]) => [n, `${count(n)} ${FAILURE_KINDS[kind] ? `${FAILURE_KINDS[kind]} (${kind})` : kind}`] as const,
  );
  const statuses = Object.entries(summary.statuses)
    .filter(([status]) => status !== '200' && status !== '429')
    .map(([status, n]) => [n, `${count(n)} answered ${status}`] as const);
  return [...failed, ...statuses]
    .sort((a, b) => b[0] - a[0])
    .map(([, text]) => text)
    .join(', ');
}

function summaryText(summary: LoadSummary): string {
  const table = markdownTable(
    [
      ['answered', 'per second', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'allowed', 'denied', 'failed'],
      [
        count(summary.requests),
        count(summary.throughput),
        ...[summary.latencyMs.p50, summary.latencyMs.p90, summary.latencyMs.p99, summary.latencyMs.max].map(String),
        count(summary.allowed),
        count(summary.denied),
        count(summary.errors),
      ],
    ],
    { align: 'r' },
  );
  const statuses = Object.entries(summary.statuses).map(([status, n]) => `${status}: ${count(n)}`);
  const failures = Object.entries(summary.failures).map(
    ([kind, n]) => `${FAILURE_KINDS[kind] ? `${FAILURE_KINDS[kind]} (${kind})` : kind}: ${count(n)}`,
  );
  return [
    table,
    `answers by status: ${statuses.join(', ') || 'none'}`,
    ...(failures.length > 0 ? [`no answer: ${failures.join(', ')}`] : []),
  ].join('\n');
}
