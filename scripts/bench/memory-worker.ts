// One configuration of the memory suite (memory.ts): `memory-worker.ts EVENTS CLIENTS`:
// CLIENTS distinct clients spread evenly over EVENTS events, each checked once. Prints a
// MemoryResult as JSON. Run with --expose-gc.
import { setTimeout as sleep } from 'node:timers/promises';
import type { CounterStore } from '../../src/store/counter-store.js';
import { memgateModules } from './compiled.js';
import type { MemoryResult } from './memory.js';

const { createLimiter } = await memgateModules();

const [events = 1, clients = 10_000] = process.argv.slice(2, 4).map(Number);

/** Answers every call at once: Memcached's memory is not this process's. */
const instantStore: CounterStore = {
  kind: 'instant',
  shared: true,
  description: 'answers at once',
  incrementAndRead: (increments, reads) =>
    Promise.resolve({ incremented: increments.map(({ delta }) => delta), read: reads.map(() => 0) }),
  decrement: () => Promise.resolve(),
  reset: () => Promise.resolve(),
  ping: () => Promise.resolve(),
  health: () => Promise.resolve([]),
  close: () => Promise.resolve(),
};

const names = Array.from({ length: events }, (_, i) => `event${i}`);
const policies = {
  events: Object.fromEntries(names.map((name) => [name, { limits: [{ limit: 1_000_000_000, window: '60s' }] }])),
};
// Half a second into a minute: a 60 s window then holds 59 second buckets and the minute's.
const nowMs = Math.floor(Date.now() / 60_000) * 60_000 + 500;
const limiter = createLimiter({ policies, store: instantStore, now: () => nowMs });

const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const started = performance.now();
for (let i = 0; i < clients; i++) await limiter.check({ event: names[i % events] as string, feature: `client-${i}` });
const seconds = Math.round((performance.now() - started) / 100) / 10;
const peakRssMb = Math.round(process.resourceUsage().maxRSS / 1024);
// What stays once the garbage of evicted clients is collected.
gc();
await sleep(200);
gc();
const { rss, heapUsed } = process.memoryUsage();
const { features: cachedClients, bytes } = limiter.cacheUsage;
const result: MemoryResult = {
  events,
  clients,
  seconds,
  peakRssMb,
  rssMb: Math.round(rss / 2 ** 20),
  heapMb: Math.round(heapUsed / 2 ** 20),
  cachedClients,
  cacheMb: Math.round(bytes / 2 ** 20),
};
process.stdout.write(`${JSON.stringify(result)}\n`);
