// Long work on the serving thread (a reload's planning, its description of what changed) run
// as a generator's steps, with the event loop let through every few milliseconds: checks
// waiting are answered between slices, not after all of them.
import { setImmediate } from 'node:timers/promises';
import { DEFAULTS } from './defaults.js';

/** The generator's value, its steps run in slices of at most `sliceMs` (as near as a step allows). */
export async function inSlices<T>(steps: Generator<void, T>, sliceMs: number = DEFAULTS.planSliceMs): Promise<T> {
  let sliceStart = performance.now();
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (performance.now() - sliceStart >= sliceMs) {
      await setImmediate();
      sliceStart = performance.now();
    }
  }
}

/** The generator's value, all steps at once: where nothing is served yet (a start, a test, a command). */
export function allAtOnce<T>(steps: Generator<void, T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}
