// What an instance's memory does as its active clients grow: each configuration checks N
// distinct clients spread over E events once each, in a process of its own, with the
// default cache budget, against a store that answers at once (Memcached holds its counts
// in its own process, so only memgate's memory is measured).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { markdownTable } from 'markdown-table';
import type { Suite } from './suite.js';

const CLIENTS = [10_000, 100_000, 1_000_000];
const EVENTS = [1, 8];
/** V8's old space capped the way docs/operations.md suggests for a 256 MB budget. */
const CAPPED_HEAP_MB = 512;

export interface MemoryResult {
  readonly events: number;
  readonly clients: number;
  readonly seconds: number;
  /** The most the process held at once (getrusage). */
  readonly peakRssMb: number;
  /** Once the garbage of evicted clients was collected. */
  readonly rssMb: number;
  readonly heapMb: number;
  readonly cachedClients: number;
  readonly cacheMb: number;
}

const run = promisify(execFile);

export const memory: Suite = {
  name: 'memory',
  about: 'RSS of an instance against 10k, 100k and 1M active clients over 1 and 8 events, within the cache budget',
  estimateSeconds: () => 90,

  run: async ({ progress, doing }) => {
    const configurations = [
      ...EVENTS.flatMap((events) => CLIENTS.map((clients) => ({ events, clients, capped: false }))),
      { events: 8, clients: 1_000_000, capped: true },
    ];
    const rows: string[][] = [];
    for (const { events, clients, capped } of configurations) {
      doing(
        `memory: ${clients.toLocaleString('en')} clients over ${events} events${capped ? ` (old space ${CAPPED_HEAP_MB} MB)` : ''}`,
      );
      const flags = ['--expose-gc', ...(capped ? [`--max-old-space-size=${CAPPED_HEAP_MB}`] : []), '--import', 'tsx'];
      const { stdout } = await run(
        process.execPath,
        [...flags, 'scripts/bench/memory-worker.ts', String(events), String(clients)],
        { maxBuffer: 1 << 20 },
      );
      const r = JSON.parse(stdout) as MemoryResult;
      progress(
        `memory: ${clients} clients over ${events} events${capped ? ` (old space ${CAPPED_HEAP_MB} MB)` : ''}: peak RSS ${r.peakRssMb} MB, ${r.rssMb} MB after GC, ${r.cachedClients} clients kept, ${r.seconds} s`,
      );
      rows.push([
        capped ? `${events}, --max-old-space-size=${CAPPED_HEAP_MB}` : String(events),
        r.clients.toLocaleString('en'),
        String(r.peakRssMb),
        String(r.rssMb),
        String(r.heapMb),
        r.cachedClients.toLocaleString('en'),
        String(r.cacheMb),
        String(r.seconds),
      ]);
    }
    const table = markdownTable(
      [
        [
          'events',
          'active clients',
          'peak RSS MB',
          'RSS after GC MB',
          'heap MB',
          'clients kept',
          'cache MB (estimate)',
          'seconds',
        ],
        ...rows,
      ],
      {
        align: ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
      },
    );
    const line = `The cache holds its budget (256 MB, MEMGATE_CACHE_MB) whatever the number of clients and events, and the live heap follows it. The peak RSS is V8's: capped with --max-old-space-size=${CAPPED_HEAP_MB}, it stays near the budget at the same speed.`;
    const markdown = `## Memory

Produced by \`npm run bench -- --suite memory\`.

Each configuration runs in a process of its own (\`scripts/bench/memory-worker.ts\`): a limiter with the default cache budget checks each of N distinct clients once, spread evenly over 1 or 8 events of 60 s windows in 1 s buckets, half a second into a minute (when such a window is largest: 60 buckets), against a store that answers every check at once. Peak RSS is getrusage's maximum; RSS and heap after are read once the garbage of evicted clients is collected. Every client beyond what the budget holds evicts the least recently checked one, so a million clients churn through the cache: V8 lets that garbage pile up before it collects, which is the gap between the peak and what stays. Capping V8's old space (\`NODE_OPTIONS=--max-old-space-size=512\`, last row) bounds the peak too, for some CPU spent collecting. Before the budget, each event kept 10,000 clients whatever their size: eight events of day windows (15 KB each) held 80,000 clients, about 1.2 GB.

${table}

${line}
`;
    return { markdown, summary: `${table}\n\n${line}` };
  },
};
