import { Bench } from 'tinybench';
import { createLimiter } from '../../src/counting/limiter.js';
import { createEmbeddedStore } from '../../src/store/embedded-store.js';
import { featureSpread } from '../lib/run-load.js';

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
  const cases = [
    { name: '60 s window, one hot feature', window: '60s', features: 'hot' },
    { name: '60 s window, 100,000 Zipf features', window: '60s', features: 'zipf:100000' },
    { name: '1-day window, one hot feature', window: '1d', features: 'hot' },
  ];
  const bench = new Bench({ time: milliseconds });
  for (const { name, window, features } of cases) {
    const limiter = createLimiter({ policies: { events: { bench: { limits: [{ limit: HIGH_LIMIT, window }] } } }, store: createEmbeddedStore() });
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
