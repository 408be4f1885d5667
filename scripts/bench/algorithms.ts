// What each algorithm costs a check: limiter.check in this process against the real Memcached
// the bench runs, the same run for every algorithm, CPU time per check (process.cpuUsage) and
// checks per second. A sliding window is one call (increment and read); a token bucket is a
// read and a compare-and-swap, two round trips, and an instance sends one round at a time per
// client, so a hot client's requests are decided a round's worth at a time.
import { markdownTable } from 'markdown-table';
import { memgateModules } from './compiled.js';
import type { Suite } from './suite.js';

const HIGH = 1_000_000_000;
const CONCURRENCY = 64;

interface Case {
  readonly name: string;
  readonly event: object;
  /** How many clients the checks go to, in turn. */
  readonly clients: number;
}

const CASES: readonly Case[] = [
  {
    name: 'sliding 1m in 1 s buckets, 1,000 clients',
    event: { limits: [{ limit: HIGH, window: '1m' }] },
    clients: 1000,
  },
  {
    name: 'fixed 1h, 1,000 clients',
    event: { algorithm: 'fixed', limits: [{ limit: HIGH, window: '1h' }] },
    clients: 1000,
  },
  {
    name: 'fixed 1mo from the 15th in Europe/Berlin, 1,000 clients',
    event: { algorithm: 'fixed', limits: [{ limit: HIGH, window: '1mo', anchor: 15, timezone: 'Europe/Berlin' }] },
    clients: 1000,
  },
  {
    name: 'token bucket, 1,000 clients',
    event: { algorithm: 'token-bucket', limits: [{ rate: `${HIGH}/s`, burst: HIGH }] },
    clients: 1000,
  },
  { name: 'sliding 1m, one hot client', event: { limits: [{ limit: HIGH, window: '1m' }] }, clients: 1 },
  {
    name: 'token bucket, one hot client',
    event: { algorithm: 'token-bucket', limits: [{ rate: `${HIGH}/s`, burst: HIGH }] },
    clients: 1,
  },
];

interface Measured {
  readonly name: string;
  readonly checksPerSecond: number;
  readonly cpuMicrosPerCheck: number;
}

async function measure(servers: string, { event, clients }: Case, seconds: number): Promise<Omit<Measured, 'name'>> {
  const { createLimiter, createMemcachedStore } = await memgateModules();
  const store = createMemcachedStore({ servers });
  const limiter = createLimiter({ policies: { events: { bench: event } }, store, keyPrefix: `alg${Date.now() % 1e6}` });
  const features = Array.from({ length: clients }, (_, i) => `client-${i}`);
  let next = 0;
  let checks = 0;
  const run = async (until: number) => {
    while (performance.now() < until) {
      await limiter.check({ event: 'bench', feature: features[next++ % clients] as string });
      checks++;
    }
  };
  // A second of warm-up: connections open, code optimized.
  await Promise.all(Array.from({ length: CONCURRENCY }, () => run(performance.now() + 1000)));
  checks = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, () => run(started + seconds * 1000)));
  const elapsed = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  await limiter.close();
  return { checksPerSecond: Math.round(checks / elapsed), cpuMicrosPerCheck: (used.user + used.system) / checks };
}

export async function benchAlgorithms(servers: string, seconds: number, rounds: number): Promise<Measured[]> {
  const results: { name: string; runs: Omit<Measured, 'name'>[] }[] = CASES.map(({ name }) => ({ name, runs: [] }));
  // Rounds interleave the cases, so a machine busy for a while weighs on every case alike.
  for (let round = 0; round < rounds; round++)
    for (const [i, one] of CASES.entries()) results[i]?.runs.push(await measure(servers, one, seconds));
  return results.map(({ name, runs }) => {
    const best = runs.reduce((a, b) => (b.cpuMicrosPerCheck < a.cpuMicrosPerCheck ? b : a));
    return { name, ...best };
  });
}

export const algorithms: Suite = {
  name: 'algorithms',
  about: 'CPU per check of sliding, fixed, calendar and token-bucket limits, in process against Memcached, same run',
  estimateSeconds: ({ duration, rounds }) => CASES.length * rounds * (duration + 1.5),

  run: async ({ servers, duration, rounds, doing }) => {
    doing('algorithms: limiter.check of each algorithm against Memcached');
    const results = await benchAlgorithms(servers, duration, rounds);
    const sliding = results[0]?.cpuMicrosPerCheck ?? 1;
    const table = markdownTable(
      [
        ['limit', 'checks/s', 'CPU µs/check', 'vs sliding'],
        ...results.map((r) => [
          r.name,
          String(r.checksPerSecond),
          r.cpuMicrosPerCheck.toFixed(1),
          `${(r.cpuMicrosPerCheck / sliding).toFixed(2)}×`,
        ]),
      ],
      { align: ['l', 'r', 'r', 'r'] },
    );
    const markdown = `## Algorithms

Produced by \`npm run bench -- --suite algorithms\`.

\`limiter.check\` in one process against the bench's Memcached, no HTTP: ${CONCURRENCY} checks in flight, each case for \`--duration\` seconds after a second of warm-up, every case in each of \`--rounds\` rounds (the round with the least CPU per check is shown). Limits are never reached, so every check is admitted and counted: the hot path.

${table}

A sliding or fixed window is one call to Memcached per check (increment the current buckets, read the others). A token bucket is a read and a compare-and-swap, two round trips; its instance sends one round at a time per client, so a hot client's concurrent checks are decided together, a round's worth at a time, in one read and one swap.
`;
    return { markdown, summary: table };
  },
};
