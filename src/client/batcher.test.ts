import { describe, expect, it } from 'vitest';
import { createBatcher } from './batcher.js';

/** A batcher whose send records each batch and answers each item doubled. */
function recording(windowMs: number, maxSize: number) {
  const batches: number[][] = [];
  const batcher = createBatcher<number, number>({
    windowMs,
    maxSize,
    send: (items) => {
      batches.push([...items]);
      return Promise.resolve(items.map((item) => item * 2));
    },
  });
  return { batcher, batches };
}

describe('createBatcher', () => {
  it('sends what is queued in one tick as one batch, each caller getting its own result', async () => {
    const { batcher, batches } = recording(0, 100);
    const results = await Promise.all([1, 2, 3].map((n) => batcher.add(n)));
    expect(results).toEqual([2, 4, 6]);
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('starts a new batch in the next tick', async () => {
    const { batcher, batches } = recording(0, 100);
    await batcher.add(1);
    await batcher.add(2);
    expect(batches).toEqual([[1], [2]]);
  });

  it('sends at most maxSize to a batch, and a full batch at once', async () => {
    const { batcher, batches } = recording(0, 4);
    const all = Array.from({ length: 10 }, (_, i) => batcher.add(i));
    // Two full batches left before the tick ended.
    expect(batches).toEqual([
      [0, 1, 2, 3],
      [4, 5, 6, 7],
    ]);
    expect(await Promise.all(all)).toEqual(Array.from({ length: 10 }, (_, i) => i * 2));
    expect(batches.map((b) => b.length)).toEqual([4, 4, 2]);
  });

  it('with a window, waits for items of later ticks', async () => {
    const { batcher, batches } = recording(5, 100);
    const first = batcher.add(1);
    await new Promise((resolve) => setTimeout(resolve, 1));
    const second = batcher.add(2);
    expect(await Promise.all([first, second])).toEqual([2, 4]);
    expect(batches).toEqual([[1, 2]]);
  });

  it('rejects every item of a batch whose send failed, and not those of others', async () => {
    let calls = 0;
    const batcher = createBatcher<number, number>({
      windowMs: 0,
      maxSize: 2,
      send: (items) => (++calls === 1 ? Promise.reject(new Error('down')) : Promise.resolve([...items])),
    });
    const results = await Promise.allSettled([1, 2, 3].map((n) => batcher.add(n)));
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'fulfilled']);
  });

  it('rejects a batch answered with the wrong number of results', async () => {
    const batcher = createBatcher<number, number>({ windowMs: 0, maxSize: 10, send: () => Promise.resolve([1]) });
    await expect(Promise.all([batcher.add(1), batcher.add(2)])).rejects.toThrow(/a batch of 2 was answered with 1/);
  });
});
