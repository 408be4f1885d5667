// A log's lines from its bytes as they stream in, holding at most one line's worth of them.
// node:readline and split2 keep a line however long it grows until its newline comes (split2's
// maxLength is checked only between chunks, and what it skips it does not count), so a file
// with no newline would be read whole; here a line past `maxLineBytes` is dropped as it
// streams by and reported by its number, and the lines after it are read as usual.

/** One line of the log, numbered from 1; its newline (and a CR before it) not included. */
export type SplitLine =
  { readonly number: number; readonly text: string } | { readonly number: number; readonly tooLong: true };

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

export class LineSplitter {
  /** The line being read, in the pieces its chunks brought; emptied once it is too long. */
  #pieces: Buffer[] = [];
  /** Bytes of the line being read so far, those dropped included. */
  #bytes = 0;
  #lastNumber = 0;

  constructor(private readonly maxLineBytes: number) {}

  /** The lines `chunk` ends, in order; the start of the next is kept for the next chunk. */
  push(chunk: Buffer): SplitLine[] {
    const lines: SplitLine[] = [];
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE); end !== -1; end = chunk.indexOf(NEWLINE, start)) {
      this.#keep(chunk.subarray(start, end));
      lines.push(this.#line());
      start = end + 1;
    }
    this.#keep(chunk.subarray(start));
    return lines;
  }

  /** The last line, when the log does not end with a newline. */
  end(): SplitLine[] {
    return this.#bytes > 0 ? [this.#line()] : [];
  }

  #keep(piece: Buffer): void {
    if (piece.length === 0) return;
    this.#bytes += piece.length;
    if (this.#bytes <= this.maxLineBytes + 1) this.#pieces.push(piece);
    // One byte more than the longest line is kept, for a CR that ends a line of the longest length.
    else this.#pieces = [];
  }

  #line(): SplitLine {
    const number = ++this.#lastNumber;
    const pieces = this.#pieces;
    let bytes = this.#bytes;
    this.#pieces = [];
    this.#bytes = 0;
    const last = pieces.at(-1);
    if (last?.at(-1) === CARRIAGE_RETURN) bytes--;
    if (bytes > this.maxLineBytes) return { number, tooLong: true };
    const whole = pieces.length === 1 ? (pieces[0] as Buffer) : Buffer.concat(pieces);
    return { number, text: whole.toString('utf8', 0, bytes) };
  }
}
