// One policy shape of the memory suite's second table (memory.ts): `memory-worker.ts SHAPE`.
// What a cached client takes of the heap against what the feature cache counts it at, at
// the second the shape's windows hold the most buckets and at an average second, each
// client denied so that it keeps its last denial too. Prints an EstimateResult as JSON.
// Collections are asked for through scripts/lib/collected-heap.ts.
import { memgateModules } from './compiled.js';
import { SHAPES, type EstimateResult } from './memory.js';
import { collectedHeap } from '../lib/collected-heap.js';
import { denyingStore } from '../lib/denying-store.js';

const { createLimiter } = await memgateModules();

const CLIENTS = 4000;

const shape = process.argv[2] ?? '1 min';
const policy = SHAPES[shape];
if (!policy) throw new Error(`no shape ${JSON.stringify(shape)}`);

/** Heap and estimate per client, CLIENTS more clients cached at `second`. */
async function perClient(second: number): Promise<{ heap: number; estimate: number }> {
  const limiter = createLimiter({
    policies: { events: { bench: policy } },
    store: denyingStore,
    now: () => second * 1000 + 500,
    cacheBytes: 2 ** 40,
  });
  // A denial pauses before it reads again: clients are checked 200 at a time.
  const fill = async (from: number) => {
    for (let i = from; i < from + CLIENTS; i += 200) {
      await Promise.all(
        Array.from({ length: 200 }, (_, j) => limiter.check({ event: 'bench', feature: `client-${i + j}` })),
      );
    }
  };
  // The first clients pay for what is made once (compiled code, shapes); the next are measured.
  await fill(0);
  const heapBefore = collectedHeap();
  const estimateBefore = limiter.cacheUsage.bytes;
  await fill(CLIENTS);
  return {
    heap: (collectedHeap() - heapBefore) / CLIENTS,
    estimate: (limiter.cacheUsage.bytes - estimateBefore) / CLIENTS,
  };
}

// The seconds of one period of the largest bucket: the worst, and one holding the mean.
const probe = createLimiter({ policies: { events: { bench: policy } }, store: denyingStore });
const plan = probe.plans.get('bench');
if (!plan || !('levels' in plan)) throw new Error('no plan of windows');
const period = Math.max(...plan.levels.map(({ size }) => size));
const from = Math.floor(Date.now() / 86_400_000) * 86_400;
const counts = Array.from({ length: period }, (_, i) =>
  plan.limits.reduce((sum, limit) => sum + limit.cover(from + i).reduce((n, run) => n + run.count, 0), 0),
);
const most = Math.max(...counts);
const mean = counts.reduce((a, b) => a + b, 0) / counts.length;
const worst = await perClient(from + counts.indexOf(most));
const nearest = counts.reduce(
  (best, count, i) => (Math.abs(count - mean) < Math.abs((counts[best] ?? 0) - mean) ? i : best),
  0,
);
const typical = await perClient(from + nearest);
const result: EstimateResult = {
  shape,
  buckets: { most, mean: Math.round(mean * 10) / 10 },
  estimateBytes: Math.round(worst.estimate),
  worstBytes: Math.round(worst.heap),
  meanBytes: Math.round(typical.heap),
};
process.stdout.write(`${JSON.stringify(result)}\n`);
