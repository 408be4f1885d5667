/**
 * WAL checkpoints of the usage file, in a worker thread with a connection of its own. SQLite
 * checkpoints in the commit that takes the WAL past 1,000 pages: it copies them into the
 * file and fsyncs both, 15-50 ms on the event loop. The store turns that off
 * (wal_autocheckpoint = 0) and asks for a PASSIVE checkpoint here after it writes: a
 * checkpoint that never waits for the writer, which goes on appending meanwhile.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

export interface Checkpoints {
  /** Asks for a checkpoint once the one under way, if any, has ended. */
  soon(): void;
  /** Resolves once no checkpoint is asked for or under way. */
  idle(): Promise<void>;
  /** The last checkpoint's WAL frames, and how many of them are in the file. */
  readonly last: { readonly log: number; readonly checkpointed: number } | undefined;
  /** Checkpoints what is left and stops the worker. */
  close(): Promise<void>;
}

/** The worker: CommonJS, so that it needs no loader for TypeScript. */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.libsql);
const db = new Database(workerData.path);
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
parentPort.on('message', (message) => {
  try {
    const { log, checkpointed } = checkpoint.get();
    parentPort.postMessage({ log, checkpointed });
  } catch (error) {
    parentPort.postMessage({ error: error instanceof Error ? error.message : String(error) });
  }
  if (message === 'close') db.close();
});
`;

type Answer = { readonly log: number; readonly checkpointed: number } | { readonly error: string };

export interface CheckpointOptions {
  /** A checkpoint failed; the next may succeed. */
  readonly onError: (error: Error) => void;
  /** The worker is gone: the connection must checkpoint again itself, or its WAL only grows. */
  readonly onStopped: (error: Error) => void;
}

/** Checkpoints of the file at `path`, off the event loop. */
export function walCheckpoints(path: string, { onError, onStopped }: CheckpointOptions): Checkpoints {
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: { path, libsql: createRequire(import.meta.url).resolve('libsql') },
  });
  // It keeps no process alive; close() ends it.
  worker.unref();
  /** A checkpoint is under way; another was asked for meanwhile. */
  let running = false;
  let asked = false;
  let stopped = false;
  let last: { log: number; checkpointed: number } | undefined;
  let waiting: (() => void)[] = [];

  function post(message: 'checkpoint' | 'close'): void {
    running = true;
    asked = false;
    worker.postMessage(message);
  }

  function ended(): void {
    running = false;
    for (const resolve of waiting) resolve();
    waiting = [];
  }

  worker.on('message', (answer: Answer) => {
    if ('error' in answer) onError(new Error(`checkpointing the usage history failed: ${answer.error}`));
    else last = answer;
    if (asked && !stopped) post('checkpoint');
    else ended();
  });
  worker.on('error', (error) => {
    stopped = true;
    onStopped(error);
    ended();
  });

  return {
    soon() {
      if (stopped) return;
      if (running) asked = true;
      else post('checkpoint');
    },
    idle() {
      if (!running) return Promise.resolve();
      return new Promise((resolve) => waiting.push(resolve));
    },
    get last() {
      return last;
    },
    async close() {
      await this.idle();
      if (!stopped) {
        // A last checkpoint, then the worker's connection closes.
        stopped = true;
        post('close');
        await this.idle();
      }
      await worker.terminate();
    },
  };
}
