// What an instance's memory does as its clients grow, against its budget: the memgate service
// (`node dist/main.js`, as `npm start` runs it) on the bench's Memcached, with MEMGATE_CACHE_MB
// of 16, 64 and 256, checked by ever more new clients over 8 events, its RSS read from /proc
// as they go by; and once more with V8's heap limit of before (--max-old-space-size=4096, the
// default on this machine) to compare. Then, per policy shape, the heap a cached client takes
// against what the feature cache counts it at (memory-worker.ts, a process per shape).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { markdownTable } from 'markdown-table';
import { Pool } from 'undici';
import { startService } from './processes.js';
import type { Suite } from './suite.js';

const BUDGETS_MB = [16, 64, 256];
/** Clients checked so far at each reading; each is a new client, checked once. */
const CLIENTS = [10_000, 30_000, 100_000, 300_000];
const EVENTS = 8;
const CONNECTIONS = 32;
/** V8's own heap limit on this machine, as every instance had it before memgate set one. */
const BEFORE_NODE_OPTIONS = '--max-old-space-size=4096';

const L = (window: string, extra: object = {}) => ({ limit: 1_000_000_000, window, ...extra });
/** The policy shapes of the second table, by the name it gives them (memory-worker.ts measures one). */
export const SHAPES: Record<string, object> = {
  '1 s': { limits: [L('1s')] },
  '1 min': { limits: [L('1m')] },
  '1 h': { limits: [L('1h')] },
  '1 day': { limits: [L('1d')] },
  '1 day in 1 min buckets': { limits: [L('1d', { granularity: '1m' })] },
  '1 min and 1 day (login)': { limits: [L('1m'), L('1d')] },
  'fixed 1 h': { algorithm: 'fixed', limits: [L('1h')] },
  '1, 2, 5 and 10 min and 1 h': { limits: [L('1m'), L('2m'), L('5m'), L('10m'), L('1h')] },
};

/** What memory-worker.ts prints for one shape. */
export interface EstimateResult {
  readonly shape: string;
  /** Buckets the shape's windows hold at most, and on average over a period of its largest bucket. */
  readonly buckets: { readonly most: number; readonly mean: number };
  /** What the cache counts a client at, against MEMGATE_CACHE_MB. */
  readonly estimateBytes: number;
  /** The heap a cached client took, at the second of the most buckets and at an average one. */
  readonly worstBytes: number;
  readonly meanBytes: number;
}

/** One reading of the service: after `clients` clients. */
interface Reading {
  readonly budget: number;
  readonly before: boolean;
  readonly heapLimitMb: number;
  readonly clients: number;
  readonly checksPerSecond: number;
  readonly peakMb: number;
  readonly heapPeakMb: number;
  readonly cacheMb: number;
  readonly cached: number;
}

const run = promisify(execFile);

/** The overhead docs/operations.md states: "RSS stays within `MEMGATE_CACHE_MB` + N MiB". */
function statedOverheadMb(): number | undefined {
  const stated = /RSS stays within `MEMGATE_CACHE_MB` \+ (\d+) MiB/.exec(readFileSync('docs/operations.md', 'utf8'));
  return stated?.[1] === undefined ? undefined : Number(stated[1]);
}

/** A field of a process's /proc status, in MiB: VmHWM its peak resident memory, RssAnon what is its own. */
function statusMb(pid: number, field: 'VmHWM' | 'RssAnon'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1]) / 1024;
}

/**
 * The service's peak RSS, and its launcher's own memory when it has one: the launcher's file
 * pages are node's binary, which the service maps too.
 */
function peakMb(service: { pid: number; launcherPid?: number }): number {
  return statusMb(service.pid, 'VmHWM') + (service.launcherPid ? statusMb(service.launcherPid, 'RssAnon') : 0);
}

function gauge(metrics: string, name: string): number {
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1]);
}

const POLICY = `# 8 events like login: a minute and a day in 1 s buckets.
events:
${Array.from({ length: EVENTS }, (_, i) => `  e${i}:\n    limits:\n      - { limit: 1000000000, window: 1m }\n      - { limit: 1000000000, window: 1d }\n`).join('')}`;

/** One service through every reading of CLIENTS. */
async function readings(
  servers: string,
  config: string,
  budget: number,
  before: boolean,
  doing: (what: string) => void,
): Promise<Reading[]> {
  const service = await startService({
    MEMCACHED_SERVERS: servers,
    MEMGATE_CONFIG: config,
    MEMGATE_CACHE_MB: String(budget),
    MEMGATE_KEY_PREFIX: `bm${process.pid}${before ? 'b' : ''}${budget}`,
    ...(before ? { NODE_OPTIONS: BEFORE_NODE_OPTIONS } : {}),
  });
  const pool = new Pool(service.url, { connections: CONNECTIONS });
  const scrape = async () => (await fetch(new URL('/metrics', service.url))).text();
  const found: Reading[] = [];
  try {
    let next = 0;
    let heapPeak = 0;
    for (const clients of CLIENTS) {
      doing(
        `memory: MEMGATE_CACHE_MB=${budget}${before ? ` and ${BEFORE_NODE_OPTIONS}` : ''}, ${clients.toLocaleString('en')} clients`,
      );
      const from = next;
      const started = performance.now();
      const load = { running: true };
      const watch = (async () => {
        while (load.running) {
          heapPeak = Math.max(heapPeak, gauge(await scrape(), 'nodejs_heap_size_used_bytes'));
          await sleep(250);
        }
      })();
      await Promise.all(
        Array.from({ length: CONNECTIONS }, async () => {
          for (let client = next++; client < clients; client = next++) {
            const { body } = await pool.request({
              method: 'GET',
              path: `/check?event=e${client % EVENTS}&feature=client-${client}`,
            });
            await body.dump();
          }
        }),
      );
      load.running = false;
      await watch;
      next = clients;
      const metrics = await scrape();
      found.push({
        budget,
        before,
        heapLimitMb: gauge(metrics, 'memgate_heap_limit_bytes') / 2 ** 20,
        clients,
        checksPerSecond: (clients - from) / ((performance.now() - started) / 1000),
        peakMb: peakMb(service),
        heapPeakMb: heapPeak / 2 ** 20,
        cacheMb: gauge(metrics, 'memgate_local_cache_bytes') / 2 ** 20,
        cached: gauge(metrics, 'memgate_local_cache_features'),
      });
    }
  } finally {
    await pool.close();
    await service.stop();
  }
  return found;
}

export const memory: Suite = {
  name: 'memory',
  about:
    'RSS of the service against 10k to 300k new clients and MEMGATE_CACHE_MB 16, 64 and 256; the heap a cached client takes against the estimate',
  estimateSeconds: () => 200,

  run: async ({ servers, progress, doing }) => {
    const overhead = statedOverheadMb();
    const config = join(await mkdtemp(join(tmpdir(), 'memgate-bench-memory-')), 'policies.yaml');
    await writeFile(config, POLICY);
    const all: Reading[] = [];
    for (const [budget, before] of [...BUDGETS_MB.map((b) => [b, false] as const), [256, true] as const]) {
      const found = await readings(servers, config, budget, before, doing);
      const last = found.at(-1);
      if (last)
        progress(
          `memory: MEMGATE_CACHE_MB=${budget}${before ? ` and ${BEFORE_NODE_OPTIONS}` : ''}: peak RSS ${Math.round(last.peakMb)} MB after ${last.clients.toLocaleString('en')} clients, heap limit ${Math.round(last.heapLimitMb)} MiB`,
        );
      all.push(...found);
    }
    const rssTable = markdownTable(
      [
        [
          'MEMGATE_CACHE_MB',
          'heap limit MiB',
          'clients so far',
          'checks/s',
          'peak RSS MiB',
          'peak RSS − budget',
          'heap used, peak MiB',
          'cache MiB (estimate)',
          'clients kept',
        ],
        ...all.map((r) => [
          r.before ? `${r.budget}, ${BEFORE_NODE_OPTIONS} (before)` : String(r.budget),
          String(Math.round(r.heapLimitMb)),
          r.clients.toLocaleString('en'),
          Math.round(r.checksPerSecond).toLocaleString('en'),
          String(Math.round(r.peakMb)),
          String(Math.round(r.peakMb - r.budget)),
          String(Math.round(r.heapPeakMb)),
          r.cacheMb.toFixed(1),
          r.cached.toLocaleString('en'),
        ]),
      ],
      { align: ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'] },
    );
    const bounded = all.filter((r) => !r.before);
    const worst = Math.max(...bounded.map((r) => r.peakMb - r.budget));
    const before = all.filter((r) => r.before).at(-1);
    const rssLine = `Peak RSS stayed within MEMGATE_CACHE_MB + ${Math.round(worst)} MiB at every budget${overhead === undefined ? '' : ` (docs/operations.md states + ${overhead} MiB: ${worst <= overhead ? 'held' : 'NOT held'})`}${before ? `; with V8's own limit, as before, the same load took ${Math.round(before.peakMb)} MiB at 256` : ''}.`;

    const estimates: EstimateResult[] = [];
    for (const shape of Object.keys(SHAPES)) {
      doing(`memory: the heap a cached client of ${shape} windows takes`);
      const { stdout } = await run(
        process.execPath,
        ['--expose-gc', '--import', 'tsx', 'scripts/bench/memory-worker.ts', shape],
        {
          maxBuffer: 1 << 20,
        },
      );
      estimates.push(JSON.parse(stdout) as EstimateResult);
    }
    const estimateTable = markdownTable(
      [
        [
          'windows',
          'buckets, most',
          'buckets, mean',
          'counted at, bytes',
          'heap at the most, bytes',
          'heap at the mean, bytes',
        ],
        ...estimates.map((e) => [
          e.shape,
          String(e.buckets.most),
          String(e.buckets.mean),
          e.estimateBytes.toLocaleString('en'),
          `${e.worstBytes.toLocaleString('en')} (${Math.round((100 * e.worstBytes) / e.estimateBytes)}%)`,
          `${e.meanBytes.toLocaleString('en')} (${Math.round((100 * e.meanBytes) / e.estimateBytes)}%)`,
        ]),
      ],
      { align: ['l', 'r', 'r', 'r', 'r', 'r'] },
    );
    const markdown = `## Memory

Produced by \`npm run bench -- --suite memory\`.

The memgate service (\`node dist/main.js\`, as \`npm start\` runs it, on Memcached) with \`MEMGATE_CACHE_MB\` of ${BUDGETS_MB.join(', ')}, checked by ${CLIENTS.at(-1)?.toLocaleString('en')} new clients, each once, spread over ${EVENTS} events of a minute and a day in 1 s buckets (undici, ${CONNECTIONS} keep-alive connections), read at ${CLIENTS.map((c) => c.toLocaleString('en')).join(', ')} clients: peak RSS (the serving process's \`VmHWM\`, plus its launcher's own memory, \`RssAnon\`), heap used (\`nodejs_heap_size_used_bytes\`, its peak of scrapes every 250 ms) and the cache against its budget. Every client past what the budget holds evicts the least recently checked one, so the cache churns as fast as the clients come. The heap limit is memgate's own, from the budget (docs/operations.md, Memory); the last rows give the process V8's limit on this machine, as before memgate set one.

${rssTable}

${rssLine}

What a cached client takes of the heap (\`scripts/bench/memory-worker.ts\`, a process per shape, \`--expose-gc\`): 4,000 more clients cached, each denied so that it keeps its last denial too, at the second its windows hold the most buckets and at one holding their mean, against what the cache counts it at. The count is the most: the budget bounds the heap. A client keeps its settled counts and last denial as numbers between checks, what every client of an event shares at a second once (window-layout.ts), and its whole window only while it is hot, checked again within a second (1,024 at most, counted apart, in the budget: feature-cache.ts); each client here is checked once, so what is measured is what a client keeps between checks.

${estimateTable}
`;
    return { markdown, summary: `${rssTable}\n\n${rssLine}\n\n${estimateTable}` };
  },
};
