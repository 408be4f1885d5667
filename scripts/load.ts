// Load-tests a memgate deployment's /check with autocannon and reports throughput,
// latency, decisions and why requests failed.
//   npm run load -- --url http://127.0.0.1:8080 --event login --features zipf:10000
import { markdownTable } from 'markdown-table';
import { EXIT, runCommand } from './lib/command-line.js';
import { progressIntervalMs, startProgress } from './lib/progress.js';
import { FAILURE_KINDS, featureSpread, runLoad, type LoadSummary } from './lib/run-load.js';

const USAGE = `usage: npm run load -- --url URL --event EVENT [options]

  --url URL           the memgate to load, e.g. http://127.0.0.1:8080
  --event EVENT       an event of its policy file
  --connections N     concurrent connections (default 50; at most --requests)
  --duration S        seconds to run (default 10), or
  --requests N        stop after N requests instead
  --features SPREAD   whose requests: hot (one client, the default), zipf:N (N clients,
                      Zipf 1.1 popularity) or uniform:N (N clients, equally often)
  --cost N            cost of each request (default 1)
  --seed N            seed of the feature spread (default 1)
  --json              print the result as JSON on standard output

Prints throughput, latency, answers by status and requests that got no answer by kind
(connection refused, reset, timeout, ...). Exits 0 when every request was answered 200
or 429, 1 when any failed, 2 for bad usage. Progress goes to standard error.`;

runCommand(
  {
    name: 'load',
    usage: USAGE,
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
    },
  },
  async ({ values, fail, positiveInteger }) => {
    const url = values.url ?? fail('--url is required');
    const event = values.event ?? fail('--event is required');
    const base = httpUrl(url) ?? fail(`--url must be an http URL (got ${JSON.stringify(url)})`);
    if (values.requests !== undefined && values.duration !== undefined) fail('give --duration or --requests, not both');
    const requests = values.requests === undefined ? undefined : positiveInteger(values.requests, 'requests', 1);
    const duration = positiveInteger(values.duration, 'duration', 10);
    // autocannon cannot spread fewer requests than connections.
    const connections = Math.min(positiveInteger(values.connections, 'connections', 50), requests ?? Infinity);
    const cost = positiveInteger(values.cost, 'cost', 1);
    const spread = values.features ?? 'hot';
    const seed = positiveInteger(values.seed, 'seed', 1);
    let nextFeature;
    try {
      nextFeature = featureSpread(spread, seed);
    } catch (error) {
      return fail((error as Error).message);
    }
    const everyMs = progressIntervalMs();

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
    let summary: LoadSummary;
    try {
      summary = await runLoad({
        url: base,
        event,
        connections,
        ...(requests === undefined ? { duration } : { requests }),
        cost,
        nextFeature,
        onTick: (done) => {
          const seconds = Math.min(duration, Math.round((performance.now() - started) / 1000));
          progress.update(requests === undefined ? seconds : done, `${done.toLocaleString('en')} done`);
        },
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

function httpUrl(text: string): URL | undefined {
  const url = URL.canParse(text) ? new URL(text) : undefined;
  return url?.protocol === 'http:' || url?.protocol === 'https:' ? url : undefined;
}

const noAnswer = (summary: LoadSummary) => Object.values(summary.failures).reduce((sum, n) => sum + n, 0);
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
