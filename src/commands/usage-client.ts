// Asks a running memgate's /usage and /usage/top over HTTP, with node:http: the undici
// package is in node_modules only as other packages' dependency, not one of memgate's, and
// Node's fetch refuses ports browsers block (6000, 6667, 10080, ...) where a memgate may listen.
import { get as httpGet, type IncomingMessage } from 'node:http';
import { get as httpsGet } from 'node:https';
import type { SeriesAnswer, TopAnswer } from '../usage/usage-history.js';
import { UsageError } from './command-line.js';

/** How long memgate may take to answer one question: a year of points comes in well under a second. */
const TIMEOUT_MS = 10_000;

/** What /usage is asked, as the command line wrote it; undefined is memgate's default. */
export interface SeriesQuestion {
  readonly event: string;
  readonly feature?: string | undefined;
  readonly from?: string | undefined;
  readonly until?: string | undefined;
  readonly step?: string | undefined;
  readonly maxDataPoints?: string | undefined;
}

export interface TopQuestion {
  readonly event: string;
  readonly from?: string | undefined;
  readonly until?: string | undefined;
  readonly limit?: string | undefined;
}

/** An answer as parsed, and its text as memgate sent it. */
export interface Answer<T> {
  readonly body: T;
  readonly text: string;
}

export interface MemgateClient {
  series(question: SeriesQuestion): Promise<Answer<SeriesAnswer>>;
  top(question: TopQuestion): Promise<Answer<TopAnswer>>;
}

/** `path` under `base`, which may sit under a proxy's prefix, with the parameters that are set. */
export function memgateUrl(base: URL, path: string, parameters: Readonly<Record<string, string | undefined>>): URL {
  const url = new URL(`${base.pathname.replace(/\/$/, '')}${path}`, base.origin);
  for (const [name, value] of Object.entries(parameters)) if (value !== undefined) url.searchParams.set(name, value);
  return url;
}

/**
 * A client of the memgate at `base`. A 400 (a time, range or event memgate cannot read)
 * rejects with a UsageError carrying memgate's message (exit 2); no answer, or any other
 * status, with an Error naming the URL (exit 1).
 */
export function memgateClient(base: URL): MemgateClient {
  const where = base.href.replace(/\/$/, '');
  async function get<T>(path: string, parameters: Readonly<Record<string, string | undefined>>): Promise<Answer<T>> {
    const url = memgateUrl(base, path, parameters);
    const { status, text } = await fetchText(url).catch((error: unknown) => {
      throw new Error(`memgate does not answer at ${where}: ${reason(error)}`, { cause: error });
    });
    const body = parseJson(text);
    if (status >= 200 && status < 300) {
      if (body === undefined)
        throw new Error(`${where} answered ${path} with something other than JSON: is it memgate?`);
      return { body: body as T, text };
    }
    const message = errorMessage(body);
    if (status === 400 && message !== undefined) throw new UsageError(message);
    throw new Error(
      message === undefined
        ? `${where} answered ${status} to ${path}: is it a memgate with usage history?`
        : `memgate at ${where} answered ${status}: ${message}`,
    );
  }
  return {
    series: ({ event, feature, from, until, step, maxDataPoints }) =>
      get<SeriesAnswer>('/usage', { event, feature, from, until, step, maxDataPoints }),
    top: ({ event, from, until, limit }) => get<TopAnswer>('/usage/top', { event, from, until, limit }),
  };
}

/** A GET's status and body, or a rejection when no whole answer came within TIMEOUT_MS. */
function fetchText(url: URL): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const answered = (response: IncomingMessage) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => {
        resolve({ status: response.statusCode ?? 0, text });
      });
      response.on('error', reject);
    };
    const request = (url.protocol === 'https:' ? httpsGet : httpGet)(url, { timeout: TIMEOUT_MS }, answered);
    request.on('timeout', () => request.destroy(new TimeoutError()));
    request.on('error', reject);
  });
}

class TimeoutError extends Error {
  constructor() {
    super(`no answer within ${TIMEOUT_MS / 1000} s`);
    this.name = 'TimeoutError';
  }
}

/** Why no answer came, in a word or a few: ECONNREFUSED, ENOTFOUND, a timeout. */
function reason(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException;
  return code ?? message;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** memgate's `{ error: { code, message } }`, its message. */
function errorMessage(body: unknown): string | undefined {
  const error = (body as { error?: { message?: unknown } } | undefined)?.error;
  return typeof error?.message === 'string' ? error.message : undefined;
}
