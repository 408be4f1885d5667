// What every benchmark suite is given and gives back.

export interface SuiteContext {
  /** The Memcached the suites count in, `host:port`. */
  readonly servers: string;
  /** Seconds per load run. */
  readonly duration: number;
  readonly connections: number;
  readonly rounds: number;
  /** A commit (or other ref) of this clone to measure beside this build, where a suite compares builds (--baseline). */
  readonly baseline?: string;
  /** A line that stays in the log: what a step found. */
  readonly progress: (line: string) => void;
  /** What the suite is busy with now, for the progress shown every few seconds. */
  readonly doing: (what: string) => void;
}

export interface SuiteReport {
  /** The section of docs/performance.md this suite owns, Markdown, its own heading included. */
  readonly markdown: string;
  /** What the terminal shows at the end. */
  readonly summary: string;
}

export interface Suite {
  readonly name: string;
  /** What it measures, for --help. */
  readonly about: string;
  /** About how long it takes, in seconds, for the progress estimate. */
  readonly estimateSeconds: (context: Pick<SuiteContext, 'duration' | 'rounds'>) => number;
  readonly run: (context: SuiteContext) => Promise<SuiteReport>;
}

export const median = (numbers: readonly number[]): number => {
  const sorted = [...numbers].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
};

export const verdict = (ratio: number, target: number, direction: 'at least' | 'at most'): string => {
  const met = direction === 'at least' ? ratio >= target : ratio <= target;
  return `${ratio.toFixed(2)}× (${direction === 'at least' ? '≥' : '≤'} ${target}× ${met ? 'met' : 'not met'})`;
};
