// How far a long command is, on a terminal only: one line on standard error redrawn in place a
// few times a second, and erased when the work ends, so that what the command prints after it
// reads as if it had never been there. Off a terminal (a pipe, a file, CI) it writes nothing,
// and the command's output is the same as ever.

export interface TerminalProgressOptions {
  /** Where it is drawn: standard error by default; nothing is drawn unless it is a terminal. */
  readonly stream?: NodeJS.WritableStream & { readonly isTTY?: boolean };
  /** Least time between two redraws. */
  readonly everyMs?: number;
  /** The clock, in ms (tests drive it). */
  readonly now?: () => number;
}

export interface TerminalProgress {
  /** The work is where `describe` says; drawn unless the last redraw was too recent. */
  update(describe: () => string): void;
  /** The work is done: the line is erased. */
  end(): void;
}

const ERASE_LINE = '\r\u001b[K';

export function terminalProgress({
  stream = process.stderr,
  everyMs = 250,
  now = () => performance.now(),
}: TerminalProgressOptions = {}): TerminalProgress {
  if (stream.isTTY !== true) return { update: () => undefined, end: () => undefined };
  let drawnAt: number | undefined;
  return {
    update(describe) {
      const at = now();
      if (drawnAt !== undefined && at - drawnAt < everyMs) return;
      drawnAt = at;
      stream.write(`${ERASE_LINE}${describe()}`);
    },
    end() {
      if (drawnAt !== undefined) stream.write(ERASE_LINE);
      drawnAt = undefined;
    },
  };
}
