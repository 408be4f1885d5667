/**
 * Reading policy and Envoy files with bounds: a regular file only (a FIFO's open waits for
 * a writer forever, holding one of libuv's four file threads), at most
 * DEFAULTS.policyFileMaxBytes, within DEFAULTS.policyReadDeadlineMs. A read past its
 * deadline fails its load; while it hangs (a network file system gone), later reads of
 * that file fail at once instead of taking another thread.
 */
import { readFile, stat } from 'node:fs/promises';
import { DEFAULTS } from './defaults.js';
import { tooLarge } from './policy-bounds.js';

export interface ReadBounds {
  readonly maxBytes: number;
  readonly deadlineMs: number;
}

export const POLICY_READ_BOUNDS: ReadBounds = {
  maxBytes: DEFAULTS.policyFileMaxBytes,
  deadlineMs: DEFAULTS.policyReadDeadlineMs,
};

/** A file that cannot be read, in words for the operator ("not a regular file: a FIFO"). */
export class FileReadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FileReadError';
  }
}

/** Reads still under way after their deadline, by path, with when they began. */
const hung = new Map<string, number>();

/** `path`'s text, read within the bounds; rejects with FileReadError. */
export function readBoundedText(path: string, bounds: ReadBounds = POLICY_READ_BOUNDS): Promise<string> {
  return readWithin(path, bounds.deadlineMs, () => readChecked(path, bounds.maxBytes));
}

/**
 * What `read` reads of `path`, within `deadlineMs`; while a read of `path` is late, the
 * next fails at once. (Exported for tests, which hang a read on a real FIFO.)
 */
export async function readWithin(path: string, deadlineMs: number, read: () => Promise<string>): Promise<string> {
  const since = hung.get(path);
  if (since !== undefined) {
    throw new FileReadError(
      `a read begun ${Math.round((performance.now() - since) / 1000)} s ago has not returned (a hung file system?); not read again until it does`,
    );
  }
  const began = performance.now();
  const reading = read();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      hung.set(path, began);
      // Settled at last, the file may be read again.
      reading.then(
        () => hung.delete(path),
        () => hung.delete(path),
      );
      reject(new FileReadError(`not read within ${deadlineMs} ms (a hung file system?)`));
    }, deadlineMs);
    timer.unref();
  });
  try {
    return await Promise.race([reading, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function readChecked(path: string, maxBytes: number): Promise<string> {
  let info;
  try {
    info = await stat(path);
  } catch (error) {
    throw new FileReadError(`cannot read the file: ${(error as Error).message}`);
  }
  if (!info.isFile()) throw new FileReadError(`not a regular file: ${kindOf(info)}`);
  if (info.size > maxBytes) throw new FileReadError(tooLarge(info.size, maxBytes));
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new FileReadError(`cannot read the file: ${(error as Error).message}`);
  }
  // It may have grown since stat.
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) throw new FileReadError(tooLarge(bytes, maxBytes));
  return text;
}

function kindOf(info: Awaited<ReturnType<typeof stat>>): string {
  if (info.isDirectory()) return 'a directory';
  if (info.isFIFO()) return 'a FIFO (named pipe)';
  if (info.isSocket()) return 'a socket';
  if (info.isCharacterDevice() || info.isBlockDevice()) return 'a device';
  return 'not a file';
}
