/**
 * Work on one SQLite connection, cut into slices so that no turn of the event loop is held
 * for long: each turn runs one job's steps for at most `sliceMs`, then lets the loop answer
 * /check before the next. The driver is synchronous, so a step is the unit that cannot be
 * cut; callers keep each one to a bounded number of rows.
 *
 * One lane, in which jobs never overlap:
 * - a write runs alone in its turn, before any waiting read or background job (a flush
 *   must not wait behind a queue of queries), and what its promise resolves runs before
 *   the next job begins;
 * - a read keeps the lane from its first step to its last, so no write lands in the middle
 *   of what it reads: its answer is one moment of the file;
 * - a background job (pruning, compaction) gives the lane up after each slice, so writes and
 *   reads pass it.
 */

/** A job's work: each `yield` is a point where it may pause for the event loop. */
export type Job<T> = Generator<undefined, T, undefined>;

type Kind = 'write' | 'read' | 'background';

interface Task {
  readonly kind: Kind;
  readonly job: Job<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

export interface SliceLaneOptions {
  /** How long one turn's slice may run, in ms, before it yields. */
  readonly sliceMs: number;
  /** Milliseconds, for the slices' deadlines. Default performance.now. */
  readonly clock?: () => number;
  /** Told after each turn that ran a write or a background job: what may have changed the file. */
  readonly afterChange?: () => void;
}

export class SliceLane {
  readonly #sliceMs: number;
  readonly #clock: () => number;
  readonly #afterChange: (() => void) | undefined;
  readonly #writes: Task[] = [];
  /** Reads and background jobs, in turn. */
  readonly #others: Task[] = [];
  /** A read that has begun: it keeps the lane until it ends. */
  #reading: Task | undefined;
  #scheduled = false;
  #idle: (() => void)[] = [];
  /** The longest slice so far, in ms: what the event loop waited for the lane at most. */
  longestSliceMs = 0;

  constructor({ sliceMs, clock = () => performance.now(), afterChange }: SliceLaneOptions) {
    this.#sliceMs = sliceMs;
    this.#clock = clock;
    this.#afterChange = afterChange;
  }

  /** Runs `work` in one step, before reads and background jobs that wait. */
  write<T>(work: () => T): Promise<T> {
    return this.#add('write', once(work));
  }

  /** Runs a read's steps one slice a turn, with no write or other job between its first step and its last. */
  read<T>(job: Job<T>): Promise<T> {
    return this.#add('read', job);
  }

  /** Runs a job one slice at a time, letting writes and reads in between its slices. */
  background(job: Job<void>): Promise<void> {
    return this.#add('background', job);
  }

  /** Drops background jobs that wait for their next slice: they resolve without running on. */
  stopBackground(): void {
    for (let i = this.#others.length - 1; i >= 0; i--) {
      const task = this.#others[i] as Task;
      if (task.kind !== 'background') continue;
      this.#others.splice(i, 1);
      task.job.return(undefined);
      task.resolve(undefined);
    }
    this.#settleIdle();
  }

  /** Resolves once nothing is waiting or running. */
  idle(): Promise<void> {
    if (this.#empty()) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #add<T>(kind: Kind, job: Job<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const task: Task = { kind, job, resolve: resolve as (value: unknown) => void, reject };
      (kind === 'write' ? this.#writes : this.#others).push(task);
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#empty()) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#turn();
      this.#settleIdle();
      this.#schedule();
    });
  }

  #turn(): void {
    const started = this.#clock();
    const deadline = started + this.#sliceMs;
    if (!this.#reading && this.#writes.length > 0) {
      // Writes alone in their turn: the recorder forgets a batch it wrote (when the write's
      // promise resolves) before any read begins.
      do this.#run(this.#writes.shift() as Task, deadline);
      while (this.#writes.length > 0 && this.#clock() < deadline);
      this.#afterChange?.();
    } else {
      const task = this.#reading ?? this.#others.shift();
      if (task) {
        if (task.kind === 'read') this.#reading = task;
        const ended = this.#run(task, deadline);
        if (ended && this.#reading === task) this.#reading = undefined;
        if (!ended && task.kind === 'background') this.#others.push(task);
        if (task.kind === 'background') this.#afterChange?.();
      }
    }
    this.longestSliceMs = Math.max(this.longestSliceMs, this.#clock() - started);
  }

  /** Steps a task until the deadline; true when it has ended (done or failed). */
  #run(task: Task, deadline: number): boolean {
    try {
      for (;;) {
        const step = task.job.next();
        if (step.done) {
          task.resolve(step.value);
          return true;
        }
        if (this.#clock() >= deadline) return false;
      }
    } catch (error) {
      task.reject(error);
      return true;
    }
  }

  #empty(): boolean {
    return this.#writes.length === 0 && this.#others.length === 0 && !this.#reading;
  }

  #settleIdle(): void {
    if (!this.#empty() || this.#idle.length === 0) return;
    const waiting = this.#idle;
    this.#idle = [];
    for (const resolve of waiting) resolve();
  }
}

/** A job of one step. */
function once<T>(work: () => T): Job<T> {
  // eslint-disable-next-line require-yield -- a write is one step: it never pauses
  return (function* () {
    return work();
  })();
}
