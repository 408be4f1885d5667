import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';

/** One request to replay: when, and whose. */
export interface TimedRequest {
  readonly ms: number;
  readonly feature: string;
}

export interface ShapeOptions {
  /** Same seed, same traffic. */
  readonly seed: number;
  /** About how many requests to generate. */
  readonly requests: number;
  /** The limit and window (seconds) the traffic is sized against. */
  readonly limit: number;
  readonly window: number;
  /** Epoch milliseconds of the first moment; a UTC midnight by default. */
  readonly startMs?: number;
  /**
   * Timestamps are multiples of this many milliseconds: 1000 (whole seconds, like access
   * logs and like memgate's own clock) by default, 1 for sub-second times.
   */
  readonly resolutionMs?: number;
}

export interface TrafficShape {
  readonly name: string;
  readonly description: string;
  generate(options: ShapeOptions): TimedRequest[];
}

const DEFAULT_START_MS = Date.UTC(2026, 10, 22);
const DAY_MS = 86_400_000;

/** Uniform numbers in [0, 1) from a seed. */
export function randomSource(seed: number): () => number {
  const rng = xoroshiro128plus(seed);
  return () => uniformFloat64(rng);
}

/** Poisson arrivals: gaps are exponential with mean 1 / rate (rate per ms). */
function exponentialGap(random: () => number, ratePerMs: number): number {
  return -Math.log(1 - random()) / ratePerMs;
}

/** `count` Poisson arrivals at `ratePerMs` from `startMs`, each from the client `who` names. */
function poissonArrivals(
  random: () => number,
  ratePerMs: number,
  count: number,
  startMs: number,
  who: () => string,
): TimedRequest[] {
  const out: TimedRequest[] = [];
  let t = startMs;
  for (let i = 0; i < count; i++) {
    t += exponentialGap(random, ratePerMs);
    out.push({ ms: Math.floor(t), feature: who() });
  }
  return out;
}

function steady(multiple: number): TrafficShape {
  return {
    name: `steady-${multiple}x`,
    description: `one client, Poisson arrivals at ${multiple}× the limit`,
    generate({ seed, requests, limit, window, startMs = DEFAULT_START_MS }) {
      return poissonArrivals(
        randomSource(seed),
        (multiple * limit) / (window * 1000),
        requests,
        startMs,
        () => 'client',
      );
    },
  };
}

const bursts: TrafficShape = {
  name: 'bursts',
  description: 'one client, on for a quarter window at 4× the limit, then off for three quarters',
  generate({ seed, requests, limit, window, startMs = DEFAULT_START_MS }) {
    const random = randomSource(seed);
    const windowMs = window * 1000;
    const onMs = windowMs / 4;
    const rate = (4 * limit) / windowMs;
    const out: TimedRequest[] = [];
    for (let cycleStart = startMs; out.length < requests; cycleStart += windowMs) {
      for (
        let t = cycleStart + exponentialGap(random, rate);
        t < cycleStart + onMs && out.length < requests;
        t += exponentialGap(random, rate)
      ) {
        out.push({ ms: Math.floor(t), feature: 'client' });
      }
    }
    return out;
  },
};

/**
 * The design notes' attack on fixed windows: `limit` requests in the last second before
 * a window boundary and `limit` more in the first second after it, then quiet for a window.
 */
const boundary: TrafficShape = {
  name: 'boundary',
  description: 'the limit in the last second before a window boundary and again in the first second after it',
  generate({ seed, requests, limit, window, startMs = DEFAULT_START_MS }) {
    const random = randomSource(seed);
    const windowMs = window * 1000;
    const out: TimedRequest[] = [];
    for (
      let boundaryMs = Math.ceil(startMs / windowMs + 1) * windowMs;
      out.length < requests;
      boundaryMs += 3 * windowMs
    ) {
      // Integer offsets: at 1.8e12 ms, from + 999.9999 would round up into the next second.
      const burst = (from: number) =>
        Array.from({ length: limit }, () => from + Math.floor(random() * 1000)).sort((a, b) => a - b);
      for (const ms of [...burst(boundaryMs - 1000), ...burst(boundaryMs)]) out.push({ ms, feature: 'client' });
    }
    return out.slice(0, requests);
  },
};

/**
 * Draws ranks 1..n with probability proportional to 1 / rank^exponent. `total` is the
 * sum of those weights, so rank 1 comes 1/total of the time.
 */
export function zipfSampler(
  n: number,
  exponent: number,
  random: () => number,
): (() => number) & { readonly total: number } {
  const cumulative = new Float64Array(n);
  let total = 0;
  for (let rank = 1; rank <= n; rank++) cumulative[rank - 1] = total += 1 / rank ** exponent;
  const draw = () => {
    const target = random() * total;
    let low = 0;
    let high = n - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if ((cumulative[middle] as number) < target) low = middle + 1;
      else high = middle;
    }
    return low + 1;
  };
  return Object.assign(draw, { total });
}

const ZIPF_FEATURES = 10_000;
const ZIPF_EXPONENT = 1.1;

const zipf: TrafficShape = {
  name: 'zipf',
  description: `${ZIPF_FEATURES.toLocaleString('en')} clients with Zipf(${ZIPF_EXPONENT}) popularity; the busiest at 2× the limit`,
  generate({ seed, requests, limit, window, startMs = DEFAULT_START_MS }) {
    const random = randomSource(seed);
    const rank = zipfSampler(ZIPF_FEATURES, ZIPF_EXPONENT, random);
    // The busiest client gets 1/total of all traffic; size the total so it sends 2× the limit.
    const rate = (2 * limit * rank.total) / (window * 1000);
    return poissonArrivals(random, rate, requests, startMs, () => `user-${rank()}`);
  },
};

const DIURNAL_FEATURES = 20;

/** A day's rhythm: quiet at midnight, busiest at noon (UTC), by thinning a Poisson process. */
const diurnal: TrafficShape = {
  name: 'diurnal',
  description: `${DIURNAL_FEATURES} clients whose rate swings from 0.1× to 1.9× their mean over each UTC day, at 1× the limit on average`,
  generate({ seed, requests, limit, window, startMs = DEFAULT_START_MS }) {
    const random = randomSource(seed);
    const meanRate = (limit * DIURNAL_FEATURES) / (window * 1000);
    const peakRate = 1.9 * meanRate;
    const out: TimedRequest[] = [];
    let t = startMs;
    while (out.length < requests) {
      t += exponentialGap(random, peakRate);
      const phase = ((t % DAY_MS) / DAY_MS) * 2 * Math.PI;
      const rate = meanRate * (1 - 0.9 * Math.cos(phase));
      if (random() * peakRate < rate)
        out.push({ ms: Math.floor(t), feature: `user-${1 + Math.floor(random() * DIURNAL_FEATURES)}` });
    }
    return out;
  },
};

/** Rounds every timestamp down to the shape options' resolution (whole seconds by default). */
function atResolution(shape: TrafficShape): TrafficShape {
  return {
    ...shape,
    generate(options) {
      const step = options.resolutionMs ?? 1000;
      const requests = shape.generate(options);
      return step === 1 ? requests : requests.map((r) => ({ ms: r.ms - (r.ms % step), feature: r.feature }));
    },
  };
}

export const SHAPES: readonly TrafficShape[] = [steady(0.5), steady(1), steady(2), bursts, boundary, zipf, diurnal].map(
  atResolution,
);
