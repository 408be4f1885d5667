// What recording adds to each decision, measured where no other process's load can hide it:
// UsageRecorder.record() alone, in this process (tinybench), the way the service calls it
// for every check. The JavaScript `npm start` runs when the bench has built it (compiled.ts).
import { Bench } from 'tinybench';
import type * as Recorder from '../../src/usage/recorder.js';
import { featureSpread } from '../lib/run-load.js';
import { COMPILED_ENV } from './compiled.js';

const RECORDS_PER_CALL = 1000;
/** Client names drawn ahead, so the draw is not what is timed. */
const NAMES = 65_536;

export interface RecordCost {
  readonly features: string;
  /** Nanoseconds a record() takes. */
  readonly nanoseconds: number;
}

/** record() for each spread of features (see featureSpread), on a recorder whose store is never written. */
export async function benchRecord(
  spreads: readonly string[],
  { event, top, milliseconds = 2000 }: { event: string; top: number; milliseconds?: number },
): Promise<RecordCost[]> {
  const root = process.env[COMPILED_ENV] === '1' ? '../../dist' : '../../src';
  const { UsageRecorder } = (await import(`${root}/usage/recorder.js`)) as typeof Recorder;
  const bench = new Bench({ time: milliseconds });
  const allowed = { allowed: true };
  for (const features of spreads) {
    // Not started: no timer flushes; what it counts stays in memory, a row a second.
    const recorder = new UsageRecorder({
      stores: { sqlite: { write: () => Promise.resolve() } },
      readFrom: 'sqlite',
      flushSeconds: 3600,
      top,
    });
    const next = featureSpread(features, 1);
    const names = Array.from({ length: NAMES }, () => next());
    let i = 0;
    bench.add(features, () => {
      for (let n = 0; n < RECORDS_PER_CALL; n++) recorder.record(event, names[i++ % NAMES] ?? '', allowed);
    });
  }
  await bench.run();
  return bench.tasks.map((task) => ({
    features: task.name,
    nanoseconds:
      task.result.state === 'completed' ? 1e9 / (task.result.throughput.mean * RECORDS_PER_CALL) : Number.NaN,
  }));
}
