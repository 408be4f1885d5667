import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { UsageError } from '../../src/commands/command-line.js';
import { formatSeconds, progressIntervalMs, startProgress } from './progress.js';

/** A stream that is not a terminal, as standard error is in CI, and what was written to it. */
function pipe(): { stream: PassThrough; lines: () => string[] } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  return { stream, lines: () => text.split('\n').filter(Boolean) };
}

describe('progress off a terminal', () => {
  // The clock and the timer are driven: a line's timing is asserted, not the machine's load.
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['performance', 'setInterval', 'clearInterval'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('prints a line at the start, every interval while the work goes on, and at the end', () => {
    const { stream, lines } = pipe();
    const progress = startProgress({
      label: 'replaying',
      total: 200,
      describe: (done, total) => `${done} of ${total} checks`,
      stream,
      everyMs: 40,
    });
    progress.update(50, 'steady-1x');
    vi.advanceTimersByTime(150);
    progress.update(100);
    vi.advanceTimersByTime(150);
    progress.done();
    const all = lines();
    expect(all[0]).toBe('replaying: started, 0 of 200 checks');
    // The timer speaks while nothing calls update().
    const periodic = all.slice(1, -1);
    expect(periodic.length).toBeGreaterThanOrEqual(2);
    expect(periodic[0]).toMatch(/^replaying: 25% \(50 of 200 checks\), steady-1x, \d+ s elapsed$/);
    expect(periodic.at(-1)).toMatch(/^replaying: 50% \(100 of 200 checks\), steady-1x, /);
    expect(all.at(-1)).toMatch(/^replaying: done \(100 of 200 checks\) after \d+ s$/);
  });

  it('reads where the work is for each line when given readDone, even after a busy stretch', () => {
    const { stream, lines } = pipe();
    let seconds = 1;
    const progress = startProgress({ label: 'bench', total: 100, stream, everyMs: 20, readDone: () => seconds });
    progress.update(1, 'embedded');
    // The thread is busy and nothing calls update(); the next line still says where it is.
    seconds = 40;
    vi.advanceTimersByTime(60);
    progress.stop();
    expect(lines().filter((line) => line.startsWith('bench: 40%')).length).toBeGreaterThan(0);
    expect(lines().some((line) => line.startsWith('bench: 1%'))).toBe(false);
  });

  it('says about how long is left once that is a second or more', () => {
    const { stream, lines } = pipe();
    // Every update may speak (everyMs 0); the real timer never runs in this synchronous work.
    vi.useFakeTimers({ toFake: ['performance'] });
    const progress = startProgress({ label: 'long', total: 100, stream, everyMs: 0 });
    for (let ms = 0; ms < 50; ms++) {
      progress.update(1);
      vi.advanceTimersByTime(1);
    }
    progress.update(2);
    // 2% done in 50 ms: about 2.5 s to go.
    expect(lines().at(-1)).toMatch(/^long: 2%, 0 s elapsed, about [1-9] s left$/);
    progress.stop();
  });

  it('prints from update() when the work keeps the thread too busy for the timer', () => {
    const { stream, lines } = pipe();
    const progress = startProgress({ label: 'busy', total: 10, stream, everyMs: 20 });
    // The timer never runs (this work keeps the thread busy): only the clock moves, and only update() can speak.
    vi.useFakeTimers({ toFake: ['performance'] });
    for (let ms = 1; ms <= 70; ms++) {
      vi.advanceTimersByTime(1);
      progress.update(ms / 10);
    }
    progress.stop();
    expect(
      lines().filter((line) => line.startsWith('busy: ') && line.includes('elapsed')).length,
    ).toBeGreaterThanOrEqual(2);
  });

  it('says when the work stopped before it was done, once', () => {
    const { stream, lines } = pipe();
    const progress = startProgress({ label: 'load', total: 10, stream, everyMs: 5000 });
    progress.update(3);
    progress.stop();
    progress.stop();
    progress.done();
    expect(lines()).toEqual(['load: started', 'load: stopped unfinished after 0 s']);
  });
});

describe('progress settings', () => {
  it('prints a line every 5 s unless CLI_PROGRESS_SECONDS says otherwise, and refuses nonsense', () => {
    expect(progressIntervalMs({})).toBe(5000);
    expect(progressIntervalMs({ CLI_PROGRESS_SECONDS: '0.5' })).toBe(500);
    for (const bad of ['0', '-1', 'often']) {
      expect(() => progressIntervalMs({ CLI_PROGRESS_SECONDS: bad })).toThrow(UsageError);
    }
  });

  it('writes durations as people read them', () => {
    expect([0, 4.4, 59.6, 60, 130, 3600, 3900, 7260].map(formatSeconds)).toEqual([
      '0 s',
      '4 s',
      '1 min',
      '1 min',
      '2 min 10 s',
      '1 h',
      '1 h 5 min',
      '2 h 1 min',
    ]);
  });
});
