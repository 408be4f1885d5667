// The slice lane's promises: a turn runs one job for at most its slice, writes go before
// waiting reads and background jobs, a read is never cut by a write, and background jobs
// let others in between their slices.
import { describe, expect, it } from 'vitest';
import { SliceLane, type Job } from './slice-lane.js';

/** A clock each step moves by 1 ms: a slice of `sliceMs` runs that many steps. */
function laneWithSteps(sliceMs: number) {
  let now = 0;
  const lane = new SliceLane({ sliceMs, clock: () => now });
  return { lane, tick: () => (now += 1) };
}

/** A job of `steps` steps, each noted in `log` as `name:i`, each taking 1 ms. */
function* job(name: string, steps: number, log: string[], tick: () => void): Job<string> {
  for (let i = 0; i < steps; i++) {
    log.push(`${name}:${i}`);
    tick();
    if (i < steps - 1) yield;
  }
  return name;
}

/** The turns of the event loop that passed, counted by a timer-free check each turn. */
function countTurns(): { turns: () => number; stop: () => void } {
  let turns = 0;
  let running = true;
  const next = () =>
    setImmediate(() => {
      turns++;
      if (running) next();
    });
  next();
  return { turns: () => turns, stop: () => (running = false) };
}

describe('the slice lane', () => {
  it('runs a job for at most its slice per turn, letting the event loop run between slices', async () => {
    const { lane, tick } = laneWithSteps(3);
    const log: string[] = [];
    const turns = countTurns();
    expect(await lane.read(job('read', 10, log, tick))).toBe('read');
    turns.stop();
    expect(log).toHaveLength(10);
    // 10 steps of 1 ms in slices of 3 ms: 4 turns, with the loop's own turns between them.
    expect(turns.turns()).toBeGreaterThanOrEqual(3);
    expect(lane.longestSliceMs).toBe(3);
  });

  it('keeps a read whole: a write asked for in the middle runs after its last step', async () => {
    const { lane, tick } = laneWithSteps(1);
    const log: string[] = [];
    const read = lane.read(job('read', 4, log, tick));
    await new Promise(setImmediate);
    const write = lane.write(() => log.push('write'));
    await Promise.all([read, write]);
    expect(log).toEqual(['read:0', 'read:1', 'read:2', 'read:3', 'write']);
  });

  it('runs waiting writes before waiting reads, and between a background job slices', async () => {
    const { lane, tick } = laneWithSteps(1);
    const log: string[] = [];
    const background = lane.background(
      (function* () {
        yield* job('bg', 3, log, tick);
      })(),
    );
    const read = lane.read(job('read', 2, log, tick));
    const write = lane.write(() => log.push('write'));
    await Promise.all([background, read, write]);
    // The write first; then the background job and the read take turns, the read whole.
    expect(log).toEqual(['write', 'bg:0', 'read:0', 'read:1', 'bg:1', 'bg:2']);
  });

  it("resolves a write's promise before the next job begins", async () => {
    const { lane, tick } = laneWithSteps(100);
    const log: string[] = [];
    const write = lane.write(() => 'written').then(() => log.push('write resolved'));
    const read = lane.read(job('read', 1, log, tick));
    await Promise.all([write, read]);
    expect(log).toEqual(['write resolved', 'read:0']);
  });

  it('rejects a job that throws, and goes on with the others', async () => {
    const { lane, tick } = laneWithSteps(5);
    const log: string[] = [];
    const failing = lane.read(
      (function* (): Job<void> {
        yield;
        throw new Error('broken');
      })(),
    );
    const after = lane.read(job('after', 2, log, tick));
    await expect(failing).rejects.toThrow('broken');
    expect(await after).toBe('after');
    await expect(lane.write(() => 1)).resolves.toBe(1);
  });

  it('stops background jobs between slices, and is idle once all else has run', async () => {
    const { lane, tick } = laneWithSteps(1);
    const log: string[] = [];
    const background = lane.background(
      (function* () {
        yield* job('bg', 100, log, tick);
      })(),
    );
    const read = lane.read(job('read', 2, log, tick));
    await new Promise(setImmediate);
    lane.stopBackground();
    await Promise.all([background, read, lane.idle()]);
    expect(log).toEqual(['bg:0', 'read:0', 'read:1']);
  });

  it('tells afterChange of each turn that wrote or ran a background job, not of reads', async () => {
    let now = 0;
    const changes: string[] = [];
    const log: string[] = [];
    const lane = new SliceLane({ sliceMs: 1, clock: () => now, afterChange: () => changes.push(log.at(-1) ?? '') });
    const tick = () => (now += 1);
    await Promise.all([
      lane.write(() => log.push('write')),
      lane.read(job('read', 2, log, tick)),
      lane.background(
        (function* () {
          yield* job('bg', 2, log, tick);
        })(),
      ),
    ]);
    expect(changes).toEqual(['write', 'bg:0', 'bg:1']);
  });
});
