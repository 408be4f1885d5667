import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { terminalProgress } from './terminal-progress.js';

/** A stream that keeps what is written to it, a terminal or not. */
function stream(isTTY: boolean) {
  const written: string[] = [];
  const sink = Object.assign(
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        written.push(chunk.toString());
        done();
      },
    }),
    { isTTY },
  );
  return { sink, written };
}

describe('progress on a terminal', () => {
  it('redraws one line in place at most every everyMs, and erases it at the end', async () => {
    const { sink, written } = stream(true);
    const clock = { ms: 0 };
    const progress = terminalProgress({ stream: sink, everyMs: 100, now: () => clock.ms });
    progress.update(() => 'read 1 line');
    clock.ms = 50;
    progress.update(() => 'read 2 lines');
    clock.ms = 100;
    progress.update(() => 'read 3 lines');
    progress.end();
    await new Promise((resolve) => setImmediate(resolve));
    expect(written).toEqual(['\r\u001b[Kread 1 line', '\r\u001b[Kread 3 lines', '\r\u001b[K']);
  });

  it('writes nothing where it is not a terminal', async () => {
    const { sink, written } = stream(false);
    const progress = terminalProgress({ stream: sink, everyMs: 0 });
    progress.update(() => 'read 1 line');
    progress.end();
    await new Promise((resolve) => setImmediate(resolve));
    expect(written).toEqual([]);
  });
});
