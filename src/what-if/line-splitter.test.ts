import { describe, expect, it } from 'vitest';
import { LineSplitter, type SplitLine } from './line-splitter.js';

/** Every line of `chunks` fed in turn to one splitter. */
function split(chunks: readonly (string | Buffer)[], maxLineBytes: number): SplitLine[] {
  const splitter = new LineSplitter(maxLineBytes);
  return [...chunks.flatMap((chunk) => splitter.push(Buffer.from(chunk))), ...splitter.end()];
}

describe('a log split into lines as it streams', () => {
  it('numbers its lines, wherever the chunks break them, without their newlines or CRs', () => {
    const text = 'first\r\nsecond\n\nfourth, no newline';
    const whole = split([text], 100);
    expect(whole).toEqual([
      { number: 1, text: 'first' },
      { number: 2, text: 'second' },
      { number: 3, text: '' },
      { number: 4, text: 'fourth, no newline' },
    ]);
    // A byte at a time: a line and a CR split across chunks read the same.
    expect(
      split(
        [...Buffer.from(text)].map((byte) => Buffer.from([byte])),
        100,
      ),
    ).toEqual(whole);
  });

  it('keeps a character split across chunks whole', () => {
    const bytes = Buffer.from('café\n');
    expect(split([bytes.subarray(0, 4), bytes.subarray(4)], 100)).toEqual([{ number: 1, text: 'café' }]);
  });

  it('skips a line longer than the most, whether it comes in one chunk or many, and reads on', () => {
    const longest = 'x'.repeat(10);
    const lines = split(['a\n', `${longest}\n${longest}\r\n${longest}y\n`, 'z'.repeat(7), 'z'.repeat(7), '\nb\n'], 10);
    expect(lines).toEqual([
      { number: 1, text: 'a' },
      { number: 2, text: longest },
      { number: 3, text: longest },
      { number: 4, tooLong: true },
      { number: 5, tooLong: true },
      { number: 6, text: 'b' },
    ]);
  });

  it('skips a line of many chunks with no newline, and reads the next one', () => {
    const splitter = new LineSplitter(1024);
    const megabyte = Buffer.alloc(1024 * 1024, 'x');
    for (let i = 0; i < 64; i++) expect(splitter.push(megabyte)).toEqual([]);
    expect(splitter.push(Buffer.from('\nnext\n'))).toEqual([
      { number: 1, tooLong: true },
      { number: 2, text: 'next' },
    ]);
  });
});
