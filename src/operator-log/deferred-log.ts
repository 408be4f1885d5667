// Lines that wait until the start-up line is out, so that it comes first: problems found while
// starting (a server that does not answer, a clock far off) follow it, each as one line.
import type { Logger } from 'pino';

/** A log whose lines wait until the start-up line is out, so that it comes first. */
export interface DeferredLog {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
  /** Writes the waiting lines; from then on each is written at once. */
  flush(): void;
}

export function deferredLog(logger: Logger): DeferredLog {
  let waiting: (() => void)[] | undefined = [];
  const later = (line: () => void) => {
    if (waiting) waiting.push(line);
    else line();
  };
  return {
    warn: (fields, message) => {
      later(() => {
        logger.warn(fields, message);
      });
    },
    info: (fields, message) => {
      later(() => {
        logger.info(fields, message);
      });
    },
    flush() {
      for (const line of waiting ?? []) line();
      waiting = undefined;
    },
  };
}
