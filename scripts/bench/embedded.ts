import { markdownTable } from 'markdown-table';
import { Bench } from 'tinybench';
import { featureSpread } from '../lib/run-load.js';
import { memgateModules } from './compiled.js';
import type { Suite } from './suite.js';

export interface EmbeddedResult {
  readonly name: string;
  readonly checksPerSecond: number;
}

const CHECKS_PER_CALL = 100;

/** Limits high enough that every check is allowed and counted. */
const HIGH_LIMIT = 1_000_000_000;

/**
 * limiter.check on the embedded store, in this process, no HTTP: what one core does when
 * nothing but counting is in the way.
 */
export async function benchEmbedded(milliseconds = 2000): Promise<EmbeddedResult[]> {
  const { createLimiter, createEmbeddedStore } = await memgateModules();
  const cases = [
    { name: '60 s window, one hot feature', window: '60s', features: 'hot' },
    { name: '60 s window, 100,000 Zipf features', window: '60s', features: 'zipf:100000' },
    { name: '1-day window, one hot feature', window: '1d', features: 'hot' },
  ];
  const bench = new Bench({ time: milliseconds });
  for (const { name, window, features } of cases) {
    const limiter = createLimiter({
      policies: { events: { bench: { limits: [{ limit: HIGH_LIMIT, window }] } } },
      store: createEmbeddedStore(),
    });
    const next = featureSpread(features, 1);
    // Many checks per task call, so tinybench's own timing of each call is not what is measured.
    bench.add(name, async () => {
      for (let i = 0; i < CHECKS_PER_CALL; i++) await limiter.check({ event: 'bench', feature: next() });
    });
  }
  await bench.run();
  return bench.tasks.map((task) => ({
    name: task.name,
    checksPerSecond: task.result.state === 'completed' ? Math.round(task.result.throughput.mean * CHECKS_PER_CALL) : 0,
  }));
}

export const embedded: Suite = {
  name: 'embedded',
  about: 'limiter.check on the embedded store in this process, no HTTP (tinybench)',
  estimateSeconds: () => 10,

  run: async ({ doing }) => {
    doing('embedded: limiter.check in process');
    const results = await benchEmbedded();
    const table = markdownTable(
      [
        ['embedded store, in process, no HTTP', 'checks/s', 'target'],
        ...results.map((e) => [
          e.name,
          String(e.checksPerSecond),
          `≥ 1,000,000 ${e.checksPerSecond >= 1_000_000 ? 'met' : 'not met'}`,
        ]),
      ],
      { align: ['l', 'r', 'l'] },
    );
    const markdown = `## Embedded store

Produced by \`npm run bench -- --suite embedded\`.

\`limiter.check\` in one process on one core with no HTTP (tinybench, 2 s per case, 100 checks per timed call). In the Zipf case most checks are of a client checked less than once a second, or not held by the cache, so they build that second's window anew:

${table}
`;
    return { markdown, summary: table };
  },
};
