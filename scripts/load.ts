// Load-tests a memgate deployment's /check with autocannon and reports throughput,
// latency and decisions.
//   npm run load -- --url http://127.0.0.1:8080 --event login --features zipf:10000
import { markdownTable } from 'markdown-table';
import { commandLine } from './lib/command-line.js';
import { featureSpread, runLoad } from './lib/run-load.js';

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

const { values, fail, positiveInteger } = commandLine('load', USAGE, {
  url: { type: 'string' },
  event: { type: 'string' },
  connections: { type: 'string' },
  duration: { type: 'string' },
  requests: { type: 'string' },
  features: { type: 'string' },
  cost: { type: 'string' },
  seed: { type: 'string' },
  json: { type: 'boolean' },
});
const url = values.url ?? fail('--url is required');
const event = values.event ?? fail('--event is required');
const base = (() => {
  try {
    return new URL(url);
  } catch {
    return fail(`--url must be an http URL (got ${JSON.stringify(url)})`);
  }
})();
const connections = positiveInteger(values.connections, 'connections', 50);
const requests = values.requests === undefined ? undefined : positiveInteger(values.requests, 'requests', 1);
const duration = positiveInteger(values.duration, 'duration', 10);
const cost = positiveInteger(values.cost, 'cost', 1);

const spread = values.features ?? 'hot';
const nextFeature = (() => {
  try {
    return featureSpread(spread, positiveInteger(values.seed, 'seed', 1));
  } catch (error) {
    return fail((error as Error).message);
  }
})();
const summary = await runLoad({
  url: base,
  event,
  connections,
  ...(requests === undefined ? { duration } : { requests }),
  cost,
  nextFeature,
  progress: process.stderr.isTTY,
});
if (values.json) {
  console.log(JSON.stringify({ url: base.origin, event, features: spread, connections, ...summary }, null, 2));
} else {
  console.log(
    markdownTable(
      [
        ['requests', 'per second', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'allowed', 'denied', 'errors'],
        [
          String(summary.requests),
          String(summary.throughput),
          ...[summary.latencyMs.p50, summary.latencyMs.p90, summary.latencyMs.p99, summary.latencyMs.max].map(String),
          String(summary.allowed),
          String(summary.denied),
          String(summary.errors),
        ],
      ],
      { align: 'r' },
    ),
  );
  console.log(`${connections} connections for ${summary.seconds.toFixed(1)} s against ${base.origin} (event ${event}, features ${spread}); latency in whole milliseconds, as autocannon records it`);
}
if (summary.errors > 0) process.exitCode = 1;
