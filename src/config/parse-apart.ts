/**
 * Parsing policy and Envoy files in a process of their own, off the serving process: the
 * largest file allowed takes seconds of parsing and hundreds of MiB while it lasts. A worker
 * thread kept that off the event loop, but not off the cores: V8's helper threads, shared by
 * every thread of a process, compiled the fresh thread's code and collected its garbage at the
 * serving thread's priority, and on 2 cores /check waited for them. A process of its own runs
 * a reload at a lower priority (DEFAULTS.policyParseNice), every thread of it, and has a heap
 * limit and a deadline: past either, the load is refused and the process ended. One per load.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { getPriority } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DEFAULTS } from './defaults.js';
import { MAX_NICE } from './thread-priority.js';
import { EnvoyConfig } from './envoy-config.js';
import { gatewayOf, PolicyError, PolicySet } from './policies.js';
import { knownOverrideShapes } from './policy-changes.js';
import type { EventPolicy } from './policies.js';
import { runParseJob, type ParseJob, type ParseMessage, type PartField } from './policy-parse-job.js';

export interface ParseLimits {
  /** The process's old space, in MiB. */
  readonly heapMb: number;
  readonly deadlineMs: number;
  /**
   * How many points nicer than the service the process runs: DEFAULTS.policyParseNice for a
   * reload, which shares the cores with checks; 0 at start, with no check to protect, where a
   * lowered parse would only wait behind every busy process of the machine.
   */
  readonly niceBy: number;
  /** Jobs of at most this many bytes are parsed in this process (parseHere). */
  readonly hereBytes: number;
}

/** A reload's: below the service in priority. */
export const PARSE_LIMITS: ParseLimits = {
  heapMb: DEFAULTS.policyParseHeapMb,
  deadlineMs: DEFAULTS.policyParseDeadlineMs,
  niceBy: DEFAULTS.policyParseNice,
  hereBytes: DEFAULTS.policyParseHereBytes,
};

/**
 * The start's: no check waits yet, so the parse keeps the service's priority, and files of up
 * to DEFAULTS.policyParseHereAtStartBytes are parsed here rather than pay a node start.
 */
export const START_PARSE_LIMITS: ParseLimits = {
  ...PARSE_LIMITS,
  niceBy: 0,
  hereBytes: DEFAULTS.policyParseHereAtStartBytes,
};

export interface ParsedFiles {
  readonly policies: PolicySet;
  readonly envoy: EnvoyConfig | undefined;
}

/** What V8 writes when a heap limit is reached, before it aborts the process. */
const OUT_OF_MEMORY = /heap out of memory|Reached heap limit/;
/** The end of the process's standard error kept to tell why it ended. */
const STDERR_TAIL_CHARS = 4096;

/**
 * The parse process: compiled JavaScript as it is; the TypeScript source (tests, `npm run
 * dev`) through tsx's loader, which a forked process does not inherit.
 */
function startParseProcess({ heapMb, niceBy }: ParseLimits): ChildProcess {
  const fromSource = import.meta.url.endsWith('.ts');
  const entry = fileURLToPath(new URL(`./policy-parse-process.${fromSource ? 'ts' : 'js'}`, import.meta.url));
  const loader = fromSource
    ? ['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx/package.json').replace(/package\.json$/, 'dist/loader.mjs')).href]
    : [];
  // Relative to the service's own: one started nice stays above its parse.
  const nice = Math.min(MAX_NICE, getPriority() + niceBy);
  return fork(entry, [String(nice)], {
    execArgv: [...loader, `--max-old-space-size=${heapMb}`],
    // Maps, sets and nested values cross as a structured clone, as they did between threads.
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
}

/** The bytes of a job's texts, policy file and Envoy files together. */
function jobBytes(job: ParseJob): number {
  let bytes = Buffer.byteLength(job.policies.text);
  for (const [, text] of job.envoy?.files ?? []) bytes += Buffer.byteLength(text);
  return bytes;
}

/**
 * Files this small (limits.hereBytes) are parsed here, bounded before parsing as any file is:
 * while serving, the bundled example's 400 bytes in 2.5 ms (measured warm; 2 KB of overrides
 * took 8.6 ms, past the 5 ms a check may wait), where a process of their own costs a node
 * start (some 0.3 s of CPU, and seconds where the machine is busy and the process is niced).
 */
function parseHere(job: ParseJob): ParsedFiles {
  const answer = runParseJob(job);
  if ('invalid' in answer) throw new PolicyError(answer.invalid.source, answer.invalid.problems);
  if ('failed' in answer) throw new PolicyError(job.policies.source, [`parsing failed: ${answer.failed}`]);
  const { policies, gateway, envoy, overrideShapes } = answer.parsed;
  for (const [event, words] of overrideShapes) {
    const policy = policies.events.get(event);
    if (policy) knownOverrideShapes(policy, words);
  }
  return {
    policies: new PolicySet(policies.events.values(), policies.source, gatewayOf(gateway, policies.events.keys()), policies.warnings),
    envoy,
  };
}

/**
 * The files parsed and validated in a process of their own, or here when they are at most
 * `limits.hereBytes`; rejects with PolicyError, as the parser does.
 */
export function parseApart(job: ParseJob, limits: ParseLimits = PARSE_LIMITS): Promise<ParsedFiles> {
  if (jobBytes(job) <= limits.hereBytes) {
    try {
      return Promise.resolve(parseHere(job));
    } catch (error) {
      return Promise.reject(error instanceof PolicyError ? error : new PolicyError(job.policies.source, [(error as Error).message]));
    }
  }
  const source = job.policies.source;
  return new Promise<ParsedFiles>((resolve, reject) => {
    let parser: ChildProcess;
    try {
      parser = startParseProcess(limits);
    } catch (error) {
      reject(new PolicyError(source, [`parsing failed: cannot start the parsing process: ${(error as Error).message}`]));
      return;
    }
    endedWithThisProcess(parser);
    let stderrTail = '';
    parser.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderrTail = (stderrTail + chunk).slice(-STDERR_TAIL_CHARS);
    });
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      parser.kill('SIGKILL');
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
        if (!settled) parser.send('next');
      });
    };
    parser.on('message', (message: ParseMessage) => {
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
          refuse('the parsing process sent no policies');
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
    // A process that could not start, or whose channel broke under a message: one that started
    // is ended, and why is told once it has closed (a heap limit's word comes last).
    let channelError: Error | undefined;
    parser.on('error', (error: Error) => {
      if (parser.pid === undefined) {
        running.delete(parser);
        refuse(`parsing failed: cannot start the parsing process: ${error.message}`);
        return;
      }
      channelError ??= error;
      parser.kill('SIGKILL');
    });
    // After its standard error is read to the end: V8's word on a heap limit is there.
    parser.on('close', (code, signal) => {
      refuse(
        OUT_OF_MEMORY.test(stderrTail)
          ? `parsing took more than the ${limits.heapMb} MiB it may; not used`
          : channelError
            ? `parsing failed: ${channelError.message}`
            : `the parsing process ended (${signal ?? `exit ${String(code)}`}) without an answer`,
      );
    });
    parser.send(job);
  });
}

/** The parse processes running: a service that exits ends them, not a parse nobody awaits. */
const running = new Set<ChildProcess>();

function endedWithThisProcess(parser: ChildProcess): void {
  if (!process.listeners('exit').includes(endRunning)) process.on('exit', endRunning);
  running.add(parser);
  parser.once('close', () => running.delete(parser));
}

function endRunning(): void {
  for (const parser of running) parser.kill('SIGKILL');
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
