// Counts over time for `memgate what-if --chart`, in at most `maxPoints` steps whatever span the
// log covers: the step starts at a minute and grows as the log goes on (5 min, 15 min, … a day,
// 2 days, …), each step a whole number of the one before, so counts already taken merge into
// the larger steps without being read again. Every series shares the one step and axis.

/** Steps a timeline may take, in seconds, each dividing the next; past a day they double. */
const STEPS = [60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86_400];

/** The step after `step`. */
function nextStep(step: number): number {
  return STEPS.find((candidate) => candidate > step) ?? step * 2;
}

/** One step of a series: its start (epoch seconds) and its counts under each policy set. */
export interface TimelinePoint {
  readonly t: number;
  readonly current: number;
  readonly new: number;
}

export class Timeline {
  #step = STEPS[0] as number;
  #firstSecond: number | undefined;
  #lastSecond: number | undefined;
  /** Per series, its counts per step start, in use (0) and new (1); steps that counted nothing are absent. */
  readonly #series = new Map<string, Map<number, [number, number]>>();

  constructor(readonly maxPoints: number) {}

  /** The step, in seconds. */
  get step(): number {
    return this.#step;
  }

  /** The log has reached `second` (epoch seconds, in time order): the axis covers it. */
  reach(second: number): void {
    this.#firstSecond ??= second;
    this.#lastSecond = second;
    let step = this.#step;
    while (this.#steps(step) > this.maxPoints) step = nextStep(step);
    if (step !== this.#step) this.#regroup(step);
  }

  /** Counts one at `second` (reached already) in `series`, under the policies in use (0) or the new ones (1). */
  count(series: string, side: 0 | 1, second: number): void {
    let counts = this.#series.get(series);
    if (!counts) this.#series.set(series, (counts = new Map<number, [number, number]>()));
    const start = this.#startOf(second, this.#step);
    let point = counts.get(start);
    if (!point) counts.set(start, (point = [0, 0]));
    point[side]++;
  }

  /** Every step of the axis for `series`, in time order, 0 where it counted nothing: at most maxPoints. */
  points(series: string): TimelinePoint[] {
    const counts = this.#series.get(series);
    if (this.#firstSecond === undefined || this.#lastSecond === undefined) return [];
    const points: TimelinePoint[] = [];
    const last = this.#startOf(this.#lastSecond, this.#step);
    for (let t = this.#startOf(this.#firstSecond, this.#step); t <= last; t += this.#step) {
      const [current, next] = counts?.get(t) ?? [0, 0];
      points.push({ t, current, new: next });
    }
    return points;
  }

  #startOf(second: number, step: number): number {
    return Math.floor(second / step) * step;
  }

  /** Steps of `step` the axis needs. */
  #steps(step: number): number {
    if (this.#firstSecond === undefined || this.#lastSecond === undefined) return 0;
    return (this.#startOf(this.#lastSecond, step) - this.#startOf(this.#firstSecond, step)) / step + 1;
  }

  #regroup(step: number): void {
    for (const [name, counts] of this.#series) {
      const regrouped = new Map<number, [number, number]>();
      for (const [t, [current, next]] of counts) {
        const start = this.#startOf(t, step);
        const point = regrouped.get(start);
        if (point) {
          point[0] += current;
          point[1] += next;
        } else regrouped.set(start, [current, next]);
      }
      this.#series.set(name, regrouped);
    }
    this.#step = step;
  }
}
