// Memory an operator can size (issue 24): the service as `npm start` runs it, on a real
// memcached, checked for every one of 8 events by ever new clients, keeps its RSS within
// MEMGATE_CACHE_MB plus the overhead docs/operations.md states, and /metrics shows its heap
// beside that budget. Before, with MEMGATE_CACHE_MB=16, this load took the process to
// 425-446 MB: a client's states of its second to eighth events were not counted against the
// budget, and V8 let the garbage of evicted clients grow to a quarter of the machine's memory.
import { readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { useMemcached } from './helpers/memcached.js';
import { startServiceProcess, type ServiceProcess } from './helpers/service-process.js';

// A client of these events is counted at about 20 KB (8 × 2.6 KB): 4 MiB holds a few hundred, so
// the load goes through the cache many times over (16 MiB held as few when a client cost 10 times
// as much).
const CACHE_MB = 4;
const CLIENTS = 160_000;
const EVENTS = 8;
const LOAD_SECONDS = 25;
const CONNECTIONS = 32;

/** The overhead docs/operations.md states, in its sentence "RSS stays within `MEMGATE_CACHE_MB` + N MiB". */
function statedOverheadMb(): number {
  const text = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
  const stated = /RSS stays within `MEMGATE_CACHE_MB` \+ (\d+) MiB/.exec(text)?.[1];
  if (stated === undefined) throw new Error('docs/operations.md states no memory overhead');
  return Number(stated);
}

/** A process's memory from Linux's /proc, in MiB: resident now, its peak, and what is its own (not file pages). */
function residentMb(pid: number): { now: number; peak: number; anonymous: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1]) / 1024;
  return { now: field('VmRSS'), peak: field('VmHWM'), anonymous: field('RssAnon') };
}

function gauge(metrics: string, name: string): number {
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1]);
}

const memcached = useMemcached({ own: true });
const services: ServiceProcess[] = [];
afterAll(async () => {
  for (const service of services) await service.stop();
});

describe('memory under many clients', () => {
  it(
    `stays within MEMGATE_CACHE_MB plus the stated overhead: ${CLIENTS.toLocaleString('en')} clients, each checked for ${EVENTS} events`,
    { timeout: 60_000 },
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'memgate-memory-'));
      const config = join(dir, 'policies.yaml');
      // A minute and a day in 1 s buckets, as the bundled login: among the largest a client keeps.
      const event = (i: number) =>
        `  e${i}:\n    limits:\n      - { limit: 5, window: 1m }\n      - { limit: 100, window: 1d }\n`;
      await writeFile(config, `events:\n${Array.from({ length: EVENTS }, (_, i) => event(i)).join('')}`);
      const service = await startServiceProcess({
        MEMCACHED_SERVERS: memcached().servers,
        MEMGATE_CONFIG: config,
        MEMGATE_CACHE_MB: String(CACHE_MB),
      });
      services.push(service);
      // The launcher (dist/main.js) and the service it started with a heap limit: the
      // launcher's file pages are node's binary, shared with the service; its own are counted.
      const pid = service.servicePid;
      expect(pid).not.toBe(service.child.pid);
      const launcherMb = () => residentMb(service.child.pid as number).anonymous;
      const boundMb = CACHE_MB + statedOverheadMb();
      const startedMb = residentMb(pid).now;
      const pool = new Pool(service.url, { connections: CONNECTIONS });
      let next = 0;
      let answered = 0;
      const statuses = new Set<number>();
      const until = Date.now() + LOAD_SECONDS * 1000;
      const connection = async () => {
        while (Date.now() < until) {
          const n = next++;
          const client = Math.floor(n / EVENTS) % CLIENTS;
          const { statusCode, body } = await pool.request({
            method: 'GET',
            path: `/check?event=e${n % EVENTS}&feature=client-${client}`,
          });
          await body.dump();
          statuses.add(statusCode);
          answered++;
        }
      };
      let sampledMb = 0;
      const watch = async () => {
        while (Date.now() < until) {
          sampledMb = Math.max(sampledMb, residentMb(pid).now + launcherMb());
          await sleep(250);
        }
      };
      await Promise.all([...Array.from({ length: CONNECTIONS }, connection), watch()]);
      await pool.close();
      const metrics = await (await fetch(`${service.url}/metrics`)).text();
      const peak = residentMb(pid).peak + launcherMb();
      const report = `${answered} checks; RSS ${Math.round(startedMb)} MiB at start, peak ${Math.round(peak)} MiB (sampled ${Math.round(sampledMb)}), bound ${boundMb} MiB`;
      // eslint-disable-next-line no-console -- the peak is quoted in docs/operations.md, Memory
      console.log(report);
      expect([...statuses], report).toEqual([200]);
      // The clients went through the cache many times over: it holds a few hundred of them.
      expect(answered, report).toBeGreaterThan(20 * gauge(metrics, 'memgate_local_cache_features'));
      expect(peak, report).toBeLessThanOrEqual(boundMb);
      // The heap beside the budget, in the scrape: the cache within its budget, the heap within its limit.
      expect(gauge(metrics, 'memgate_local_cache_budget_bytes')).toBe(CACHE_MB * 2 ** 20);
      expect(gauge(metrics, 'memgate_local_cache_bytes')).toBeLessThanOrEqual(CACHE_MB * 2 ** 20);
      const heapLimit = gauge(metrics, 'memgate_heap_limit_bytes');
      expect(heapLimit).toBeLessThan(boundMb * 2 ** 20);
      expect(gauge(metrics, 'nodejs_heap_size_used_bytes')).toBeLessThan(heapLimit);
      expect(service.logs[0]).toMatchObject({ cacheMb: CACHE_MB, heapLimitFrom: 'budget' });
    },
  );
});
