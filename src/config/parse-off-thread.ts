/**
 * Parsing policy and Envoy files in a worker thread, off the event loop and outside its
 * heap: the largest file allowed takes seconds of YAML parsing and hundreds of MiB while
 * it lasts, which on the serving thread stalled every check and, beside the cache, ran the
 * heap out. The thread has a heap limit and a deadline of its own; past either, the load
 * is refused and the thread ended. One thread per load, ended after it.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { DEFAULTS } from './defaults.js';
import { EnvoyConfig } from './envoy-config.js';
import { gatewayOf, PolicyError, PolicySet } from './policies.js';
import { knownOverrideShapes } from './policy-changes.js';
import type { EventPolicy } from './policies.js';
import type { ParseJob, ParseMessage, PartField } from './policy-parse-job.js';

export interface ParseLimits {
  /** The thread's old space, in MiB. */
  readonly heapMb: number;
  readonly deadlineMs: number;
}

export const PARSE_LIMITS: ParseLimits = {
  heapMb: DEFAULTS.policyParseHeapMb,
  deadlineMs: DEFAULTS.policyParseDeadlineMs,
};

export interface ParsedFiles {
  readonly policies: PolicySet;
  readonly envoy: EnvoyConfig | undefined;
}

/**
 * Loads policy-parse-job in the thread: compiled JavaScript as it is; the TypeScript source
 * (tests, `npm run dev`) through tsx's loader, which a thread does not inherit.
 */
const BOOTSTRAP = `
const { parentPort, workerData } = require('node:worker_threads');
const loading = workerData.tsx
  ? import(workerData.tsx).then(({ tsImport }) => tsImport(workerData.job, workerData.job))
  : import(workerData.job);
loading.then(
  ({ parseMessages }) =>
    parentPort.once('message', (job) => {
      const messages = parseMessages(job);
      const send = () => {
        const next = messages.next();
        if (!next.done) parentPort.postMessage(next.value);
      };
      parentPort.on('message', send);
      send();
    }),
  (error) => parentPort.postMessage({ failed: 'cannot load the parser: ' + (error && error.message) }),
);
`;

function threadData(): { job: string; tsx?: string } {
  const fromSource = import.meta.url.endsWith('.ts');
  const job = new URL(`./policy-parse-job.${fromSource ? 'ts' : 'js'}`, import.meta.url).href;
  if (!fromSource) return { job };
  const tsxPackage = createRequire(import.meta.url).resolve('tsx/package.json');
  return { job, tsx: pathToFileURL(tsxPackage.replace(/package\.json$/, 'dist/esm/api/index.mjs')).href };
}

/** The files parsed and validated in a thread; rejects with PolicyError, as the parser does. */
export function parseOffThread(job: ParseJob, limits: ParseLimits = PARSE_LIMITS): Promise<ParsedFiles> {
  const source = job.policies.source;
  return new Promise<ParsedFiles>((resolve, reject) => {
    const worker = new Worker(BOOTSTRAP, {
      eval: true,
      workerData: threadData(),
      resourceLimits: { maxOldGenerationSizeMb: limits.heapMb },
    });
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      outcome();
    };
    const refuse = (problem: string) => {
      settle(() => { reject(new PolicyError(source, [problem])); });
    };
    const timer = setTimeout(() => {
      refuse(`not parsed within ${limits.deadlineMs} ms; not used`);
    }, limits.deadlineMs);
    let head: Extract<ParseMessage, { head: unknown }>['head'] | undefined;
    const events = new Map<string, EventPolicy>();
    const shapes = new Map<string, [string, string][]>();
    // The next part once the checks waiting have been answered: each part is read back alone.
    const askNext = () => {
      setImmediate(() => {
        if (!settled) worker.postMessage('next');
      });
    };
    worker.on('message', (message: ParseMessage) => {
      if ('head' in message) {
        head = message.head;
        for (const [event, policy] of head.events) events.set(event, policy);
        askNext();
      } else if ('part' in message) {
        const { event, field, items } = message.part;
        append(events, shapes, event, field, items);
        askNext();
      } else if ('done' in message) {
        if (!head) {
          refuse('the parsing thread sent no policies');
          return;
        }
        const { source: parsedSource, warnings, gateway, envoy } = head;
        for (const [event, words] of shapes) {
          const policy = events.get(event);
          if (policy) knownOverrideShapes(policy, new Map(words));
        }
        // A structured clone carries the data, not the classes nor functions: made again here.
        // Inside a listener, a throw would end the process: it rejects the load instead.
        settle(() => {
          try {
            resolve({
              policies: new PolicySet(events.values(), parsedSource, gatewayOf(gateway, events.keys()), warnings),
              envoy: envoy && new EnvoyConfig(envoy.domains.values(), envoy.source),
            });
          } catch (error) {
            reject(error instanceof PolicyError ? error : new PolicyError(source, [(error as Error).message]));
          }
        });
      } else if ('invalid' in message) {
        settle(() => {
          reject(new PolicyError(message.invalid.source, message.invalid.problems));
        });
      } else refuse(`parsing failed: ${message.failed}`);
    });
    worker.on('error', (error: Error & { code?: string }) => {
      refuse(
        error.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? `parsing took more than the ${limits.heapMb} MiB it may; not used`
          : `parsing failed: ${error.message}`,
      );
    });
    worker.on('exit', (code) => {
      refuse(`the parsing thread ended (exit ${code}) without an answer`);
    });
    worker.postMessage(job);
  });
}

/** A part's items, put in their event's list (or its override words). */
function append(
  events: ReadonlyMap<string, EventPolicy>,
  shapes: Map<string, [string, string][]>,
  event: string,
  field: PartField,
  items: readonly unknown[],
): void {
  if (field === 'shapes') {
    const words = shapes.get(event) ?? [];
    for (const item of items) words.push(item as [string, string]);
    shapes.set(event, words);
    return;
  }
  const list = events.get(event)?.[field] as unknown[] | undefined;
  if (list) for (const item of items) list.push(item);
}
