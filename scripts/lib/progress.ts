import cliProgress from 'cli-progress';
import { UsageError } from '../../src/commands/command-line.js';

export interface ProgressOptions {
  /** What is going on, e.g. `replaying`; starts every line. */
  readonly label: string;
  /** How much work there is, in the units `update` counts. */
  readonly total: number;
  /** `done` and `total` for people (`1,200 of 6,000 checks`); left out when absent. */
  readonly describe?: (done: number, total: number) => string;
  /** Where progress goes: standard error by default. */
  readonly stream?: NodeJS.WritableStream & { readonly isTTY?: boolean };
  /** Off a terminal, a line this often (default 5 s; see progressIntervalMs). */
  readonly everyMs?: number;
  /**
   * For work whose progress is read rather than reported (a duration against an estimate):
   * called for every line or redraw, so that a line printed after the work kept this thread
   * busy says where it is now, not where update() last said.
   */
  readonly readDone?: () => number;
}

/** How far some long work is, on standard error. */
export interface Progress {
  /** `done` of the total is done; `doing` says what it is busy with now. */
  update(done: number, doing?: string): void;
  /** A line that stays, above the progress on a terminal. */
  log(line: string): void;
  /** The work is done: says so, with how long it took. */
  done(): void;
  /** Stops showing progress; unless done() came first, says the work stopped unfinished. */
  stop(): void;
}

const DEFAULT_EVERY_SECONDS = 5;

/**
 * How often a line of progress is printed off a terminal: CLI_PROGRESS_SECONDS, for CI logs
 * that want more or fewer lines, else 5 s. Scripts read it before they start working, so a
 * bad value is refused (exit 2) before anything is done.
 */
export function progressIntervalMs(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.CLI_PROGRESS_SECONDS;
  if (text === undefined || text === '') return DEFAULT_EVERY_SECONDS * 1000;
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new UsageError(`CLI_PROGRESS_SECONDS must be a positive number of seconds (got ${JSON.stringify(text)})`);
  return seconds * 1000;
}

/**
 * A progress reporter: on a terminal, a bar redrawn in place (cli-progress); anywhere else
 * (a CI log, a pipe), a line when the work starts, one every few seconds while it goes on,
 * and one when it ends, so a log shows that the work moves and how long is left.
 */
export function startProgress(options: ProgressOptions): Progress {
  const stream = options.stream ?? process.stderr;
  return stream.isTTY
    ? terminalProgress(options, stream)
    : lineProgress(options, stream, options.everyMs ?? DEFAULT_EVERY_SECONDS * 1000);
}

/** `4 s`, `2 min 10 s`, `1 h 5 min`: a duration people read at a glance. */
export function formatSeconds(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 === 0 ? '' : ` ${s % 60} s`}`;
  const minutes = Math.round((s % 3600) / 60);
  return `${Math.floor(s / 3600)} h${minutes === 0 ? '' : ` ${minutes} min`}`;
}

/** What a line or the bar says besides the label: how far, doing what, how long so far and to go. */
function status(options: ProgressOptions, done: number, doing: string, elapsedMs: number): string {
  const fraction = options.total > 0 ? Math.min(1, done / options.total) : 0;
  const parts = [
    `${Math.floor(fraction * 100)}%${options.describe ? ` (${options.describe(done, options.total)})` : ''}`,
  ];
  if (doing) parts.push(doing);
  parts.push(`${formatSeconds(elapsedMs / 1000)} elapsed`);
  // Linear extrapolation; meaningless until some work is done, and not worth saying near the end.
  const leftSeconds = ((elapsedMs / fraction) * (1 - fraction)) / 1000;
  if (fraction > 0.01 && leftSeconds >= 1) parts.push(`about ${formatSeconds(leftSeconds)} left`);
  return parts.join(', ');
}

function lineProgress(options: ProgressOptions, stream: NodeJS.WritableStream, everyMs: number): Progress {
  const started = performance.now();
  const state = { done: 0, doing: '', lastLine: started, stopped: false };
  const write = (line: string) => {
    stream.write(`${line}\n`);
    state.lastLine = performance.now();
  };
  const report = () => {
    if (options.readDone) state.done = options.readDone();
    write(`${options.label}: ${status(options, state.done, state.doing, performance.now() - started)}`);
  };
  write(`${options.label}: started${options.describe ? `, ${options.describe(0, options.total)}` : ''}`);
  // The timer speaks while the work waits on others (servers, threads); update() speaks
  // while the work keeps this thread busy and the timer cannot run.
  const timer = setInterval(
    () => {
      if (performance.now() - state.lastLine >= everyMs) report();
    },
    Math.min(everyMs, 1000),
  );
  timer.unref();
  return {
    update(done, doing) {
      state.done = done;
      if (doing !== undefined) state.doing = doing;
      if (performance.now() - state.lastLine >= everyMs) report();
    },
    log: write,
    done() {
      finish('done');
    },
    stop() {
      finish('stopped unfinished');
    },
  };
  function finish(how: string) {
    if (state.stopped) return;
    state.stopped = true;
    clearInterval(timer);
    const what = options.describe ? ` (${options.describe(state.done, options.total)})` : '';
    write(`${options.label}: ${how}${what} after ${formatSeconds((performance.now() - started) / 1000)}`);
  }
}

function terminalProgress(options: ProgressOptions, stream: NodeJS.WritableStream): Progress {
  const started = performance.now();
  const bars = new cliProgress.MultiBar(
    { format: `${options.label} {bar} {status}`, stream, hideCursor: true, clearOnComplete: false },
    cliProgress.Presets.shades_classic,
  );
  const state = { done: 0, doing: '', lastDraw: 0, stopped: false };
  const text = () => status(options, state.done, state.doing, performance.now() - started);
  const bar = bars.create(options.total, 0, { status: text() });
  // cli-progress redraws on its own timer; the work may keep this thread too busy for it.
  const draw = () => {
    if (options.readDone) state.done = options.readDone();
    bar.update(Math.min(state.done, options.total), { status: text() });
    bars.update();
    state.lastDraw = performance.now();
  };
  return {
    update(done, doing) {
      state.done = done;
      if (doing !== undefined) state.doing = doing;
      if (performance.now() - state.lastDraw >= 100) draw();
    },
    log(line) {
      bars.log(`${line}\n`);
      draw();
    },
    done() {
      state.done = Math.max(state.done, options.total);
      stop();
    },
    stop,
  };
  function stop() {
    if (state.stopped) return;
    state.stopped = true;
    bar.update(Math.min(state.done, options.total), { status: text() });
    bars.stop();
  }
}
