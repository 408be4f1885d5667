// The service under more connections than it can serve, on a healthy Memcached: whatever
// the concurrency, no request may be admitted past the limit, and what cannot be served
// is answered 429 or 503, never decided without the store.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { markdownTable } from 'markdown-table';
import { oneFeature, runLoad } from '../lib/run-load.js';
import { startService } from './processes.js';
import type { Suite } from './suite.js';

const LIMIT = 100;
const CONNECTIONS = [50, 200, 1000, 2000];
/**
 * The default deadline; one this load's event-loop turns run longer than; and that one
 * again with every denial asking Memcached instead of being repeated from memory.
 */
const CONFIGURATIONS = [
  { deadlineMs: 250, denialsFromMemory: true },
  { deadlineMs: 100, denialsFromMemory: true },
  { deadlineMs: 100, denialsFromMemory: false },
];

/** A sample of /metrics, summed over the lines that match. */
function sampled(metrics: string, name: string, labels: string): number {
  return metrics
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) && labels.split(',').every((label) => line.includes(label)))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

export const overload: Suite = {
  name: 'overload',
  about: 'one client checked by 50 to 2,000 connections at once, limit 100: admitted, degraded and shed answers',
  estimateSeconds: ({ duration }) => CONFIGURATIONS.length * (CONNECTIONS.length * (duration + 1) + 3),

  run: async ({ servers, duration, progress, doing }) => {
    const dir = await mkdtemp(join(tmpdir(), 'memgate-bench-'));
    const policies = join(dir, 'policies.yaml');
    await writeFile(policies, `events:\n  api:\n    limits:\n      - { limit: ${LIMIT}, window: 1h }\n`);
    const rows: string[][] = [];
    let worst = 0;
    for (const [index, { deadlineMs: deadline, denialsFromMemory }] of CONFIGURATIONS.entries()) {
      const service = await startService({
        MEMCACHED_SERVERS: servers,
        MEMGATE_CONFIG: policies,
        MEMCACHED_TIMEOUT_MS: String(deadline),
        MEMGATE_KEY_PREFIX: `ov${process.pid}c${index}`,
        ...(denialsFromMemory ? {} : { MEMGATE_MAX_DENIAL_CACHE_MS: '0' }),
      });
      try {
        for (const connections of CONNECTIONS) {
          doing(
            `overload, deadline ${deadline} ms${denialsFromMemory ? '' : ', every denial asks Memcached'}, ${connections} connections`,
          );
          const before = await (await fetch(new URL('/metrics', service.url))).text();
          const summary = await runLoad({
            url: service.url,
            event: 'api',
            connections,
            duration,
            nextFeature: oneFeature(`client-${connections}`),
          });
          const after = await (await fetch(new URL('/metrics', service.url))).text();
          const degraded =
            sampled(after, 'memgate_decisions_total', 'outcome="degraded_') -
            sampled(before, 'memgate_decisions_total', 'outcome="degraded_');
          const admitted = summary.statuses['200'] ?? 0;
          worst = Math.max(worst, admitted / LIMIT);
          const failures = Object.entries(summary.failures)
            .map(([kind, count]) => `${count} ${kind}`)
            .join(', ');
          progress(
            `overload, deadline ${deadline} ms${denialsFromMemory ? '' : ', every denial asks Memcached'}, ${connections} connections: ${admitted} admitted of ${LIMIT}, ${degraded} degraded, ${summary.statuses['503'] ?? 0} shed`,
          );
          rows.push([
            String(deadline),
            denialsFromMemory ? 'yes' : 'no',
            String(connections),
            String(summary.requests),
            `${admitted} (${(admitted / LIMIT).toFixed(2)}×)`,
            String(degraded),
            String(summary.statuses['429'] ?? 0),
            String(summary.statuses['503'] ?? 0),
            failures || '0',
            String(summary.latencyMs.p99),
          ]);
        }
      } finally {
        await service.stop();
      }
    }
    const table = markdownTable(
      [
        [
          'deadline ms',
          'denials from memory',
          'connections',
          'answered',
          'admitted (of the limit)',
          'degraded',
          '429',
          '503 shed',
          'no answer',
          'p99 ms',
        ],
        ...rows,
      ],
      { align: ['r', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'l', 'r'] },
    );
    const line = `Most admitted in any run: ${worst.toFixed(2)}× the limit (target ≤ 1×, ${worst <= 1 ? 'met' : 'not met'}).`;
    const markdown = `## Overload

Produced by \`npm run bench -- --suite overload --duration ${duration}\`.

The memgate service (\`node dist/main.js\`) on a healthy Memcached, one client with a limit of ${LIMIT} per hour checked by ${CONNECTIONS.join(', ')} connections at once for ${duration} s each (autocannon, a new client per run), with the default deadline (\`MEMCACHED_TIMEOUT_MS\` 250), with one of 100 ms, shorter than this load's event-loop turns, and with that one again and every denial asking Memcached (\`MEMGATE_MAX_DENIAL_CACHE_MS=0\`), so that every request waits on the store. "Degraded" counts decisions made without the store (\`memgate_decisions_total{outcome="degraded_…"}\`): on a healthy store there must be none. "503 shed" are checks refused past \`MEMCACHED_MAX_IN_FLIGHT\` or while the event loop lags. Before deadlines measured the store rather than memgate, a deadline of 100 ms admitted 141 of 100 at 1,000 connections and 1,545 to 2,327 at 2,000 (\`test/overload.test.ts\` holds this bound).

${table}

${line}
`;
    return { markdown, summary: `${table}\n\n${line}` };
  },
};
