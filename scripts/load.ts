// Load-tests a memgate deployment's /check with autocannon and reports throughput,
// latency and decisions.
//   npm run load -- --url http://127.0.0.1:8080 --event login --features zipf:10000
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { markdownTable } from 'markdown-table';
import { randomSource, zipfSampler } from './accuracy/traffic.js';

const USAGE = `usage: npm run load -- --url URL --event EVENT [options]

  --url URL           the memgate to load, e.g. http://127.0.0.1:8080
  --event EVENT       an event of its policy file
  --connections N     concurrent connections (default 50)
  --duration S        seconds to run (default 10), or
  --requests N        stop after N requests instead
  --features SPREAD   whose requests: hot (one client, the default), zipf:N (N clients,
                      Zipf 1.1 popularity) or uniform:N (N clients, equally often)
  --cost N            cost of each request (default 1)
  --seed N            seed of the feature spread (default 1)
  --json              print the result as JSON`;

function fail(message: string): never {
  console.error(`load: ${message}\n\n${USAGE}`);
  process.exit(2);
}

function positiveInteger(text: string | undefined, name: string, fallback: number): number {
  if (text === undefined) return fallback;
  if (!/^[0-9]+$/.test(text) || Number(text) < 1) fail(`--${name} must be a positive whole number (got ${JSON.stringify(text)})`);
  return Number(text);
}

const { values } = (() => {
  try {
    return parseArgs({
      options: {
        url: { type: 'string' },
        event: { type: 'string' },
        connections: { type: 'string' },
        duration: { type: 'string' },
        requests: { type: 'string' },
        features: { type: 'string' },
        cost: { type: 'string' },
        seed: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    return fail((error as Error).message);
  }
})();
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
if (!values.url) fail('--url is required');
if (!values.event) fail('--event is required');
let base: URL;
try {
  base = new URL(values.url);
} catch {
  fail(`--url must be an http URL (got ${JSON.stringify(values.url)})`);
}
const event = values.event;
const connections = positiveInteger(values.connections, 'connections', 50);
const requests = values.requests === undefined ? undefined : positiveInteger(values.requests, 'requests', 1);
const duration = positiveInteger(values.duration, 'duration', 10);
const cost = positiveInteger(values.cost, 'cost', 1);
const random = randomSource(positiveInteger(values.seed, 'seed', 1));

/** The next request's client, by the chosen spread. */
const spread = values.features ?? 'hot';
const match = /^(zipf|uniform):([0-9]+)$/.exec(spread);
const clients = match ? Number(match[2]) : 1;
if (spread !== 'hot' && (!match || clients < 1)) fail(`--features is hot, zipf:N or uniform:N (got ${JSON.stringify(spread)})`);
const nextFeature: () => string =
  spread === 'hot'
    ? () => 'hot-client'
    : match?.[1] === 'zipf'
      ? (() => {
          const rank = zipfSampler(clients, 1.1, random);
          return () => `client-${rank()}`;
        })()
      : () => `client-${1 + Math.floor(random() * clients)}`;

const path = (feature: string) =>
  `${base.pathname.replace(/\/$/, '')}/check?event=${encodeURIComponent(event)}&feature=${encodeURIComponent(feature)}${cost === 1 ? '' : `&cost=${cost}`}`;

const result = await new Promise<autocannon.Result>((resolve, reject) => {
  const instance = autocannon(
    {
      url: base.origin,
      connections,
      ...(requests === undefined ? { duration } : { amount: requests }),
      requests: [{ method: 'GET', setupRequest: (request) => ({ ...request, path: path(nextFeature()) }) }],
    },
    (error, finished) => {
      if (error) reject(error instanceof Error ? error : new Error(String(error)));
      else resolve(finished);
    },
  );
  // A progress bar on a terminal; nothing in a pipe.
  autocannon.track(instance, { outputStream: process.stderr, renderProgressBar: process.stderr.isTTY, renderResultsTable: false, renderLatencyTable: false });
});

const statuses = result.statusCodeStats as Record<string, { count: number } | undefined>;
const allowed = statuses['200']?.count ?? 0;
const denied = statuses['429']?.count ?? 0;
const otherStatuses = Object.entries(statuses)
  .filter(([code]) => code !== '200' && code !== '429')
  .reduce((sum, [, stat]) => sum + (stat?.count ?? 0), 0);
const answered = result['2xx'] + result.non2xx;
const summary = {
  url: base.origin,
  event,
  features: spread,
  connections,
  seconds: result.duration,
  requests: answered,
  throughput: Math.round(answered / result.duration),
  latencyMs: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
  allowed,
  denied,
  errors: result.errors + result.timeouts + otherStatuses,
};

if (values.json) {
  console.log(JSON.stringify(summary, null, 2));
} else {
  console.log(
    markdownTable(
      [
        ['requests', 'per second', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'allowed', 'denied', 'errors'],
        [
          String(summary.requests),
          String(summary.throughput),
          ...[summary.latencyMs.p50, summary.latencyMs.p90, summary.latencyMs.p99, summary.latencyMs.max].map(String),
          String(allowed),
          String(denied),
          String(summary.errors),
        ],
      ],
      { align: 'r' },
    ),
  );
  console.log(`${connections} connections for ${summary.seconds.toFixed(1)} s against ${summary.url} (event ${event}, features ${spread}); latency in whole milliseconds, as autocannon records it`);
}
if (summary.errors > 0) process.exitCode = 1;
