/**
 * How the client's requests reach memgate: an undici Pool with keep-alive connections in
 * Node, loaded only on the first request (a dynamic import, so importing memgate/client
 * loads no `node:` module), or `fetch` in other runtimes, in Node apps that did not install
 * undici (an optional peer of memgate-client), and whenever the caller passes one.
 */

/** What memgate answered: the status and the body as parsed JSON (undefined when it was not JSON). */
export interface HttpAnswer {
  readonly status: number;
  readonly body: unknown;
}

/** The request never got an answer: no connection, a broken one, or no answer within the timeout. */
export class TransportFailure extends Error {
  override readonly name = 'TransportFailure';
  constructor(
    readonly reason: 'timeout' | 'network',
    message: string,
  ) {
    super(message);
  }
}

export interface Transport {
  /** POSTs `body` as JSON to `path` (under the URL's own path); rejects only with TransportFailure. */
  post(path: string, body: unknown, headers?: Readonly<Record<string, string>>): Promise<HttpAnswer>;
  /** Waits for requests under way, then closes the connections. */
  close(): Promise<void>;
}

export type FetchFunction = (input: string, init: RequestInit) => Promise<Response>;

export interface TransportOptions {
  readonly url: URL;
  readonly timeoutMs: number;
  /** Keep-alive connections of the undici pool. */
  readonly connections: number;
  /** Sent with every request. */
  readonly headers: Readonly<Record<string, string>>;
  /** When given, used instead of undici. */
  readonly fetch?: FetchFunction | undefined;
  /**
   * Loads undici; tests replace it to see the fallback to fetch. Typed loosely so that the
   * declarations name no undici: an app without it still type-checks.
   */
  readonly loadUndici?: () => Promise<unknown>;
}

/** Node, where undici is worth loading; elsewhere the runtime's fetch is all there is. */
function inNode(): boolean {
  return (
    typeof globalThis.process === 'object' &&
    typeof (globalThis.process.versions as { node?: unknown } | undefined)?.node === 'string'
  );
}

/** The runtime's own fetch, or undefined in a runtime without one. */
export function globalFetch(): FetchFunction | undefined {
  return typeof globalThis.fetch === 'function' ? globalThis.fetch.bind(globalThis) : undefined;
}

export function createTransport(options: TransportOptions): Transport {
  if (options.fetch) return fetchTransport(options, options.fetch);
  if (inNode()) return nodeTransport(options);
  const fetch = globalFetch();
  if (!fetch) throw new Error('this runtime has no fetch: pass one as the fetch option');
  return fetchTransport(options, fetch);
}

interface RawAnswer {
  readonly status: number;
  readonly text: string;
}

/** One request under `timeoutMs`, from sending to the body's last byte. */
async function withTimeout(timeoutMs: number, send: (signal: AbortSignal) => Promise<RawAnswer>): Promise<HttpAnswer> {
  const controller = new AbortController();
  const timer = setTimeout(() => {
    controller.abort();
  }, timeoutMs);
  try {
    const { status, text } = await send(controller.signal);
    return { status, body: parseJson(text) };
  } catch (error) {
    if (controller.signal.aborted)
      throw new TransportFailure('timeout', `memgate did not answer within ${timeoutMs} ms`);
    throw new TransportFailure('network', `memgate could not be reached: ${describe(error)}`);
  } finally {
    clearTimeout(timer);
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // fetch wraps the socket's error (ECONNREFUSED, …) as its cause.
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}

function requestHeaders(options: TransportOptions, extra?: Readonly<Record<string, string>>): Record<string, string> {
  return { ...options.headers, ...extra, 'content-type': 'application/json' };
}

function basePath(url: URL): string {
  return url.pathname.replace(/\/+$/, '');
}

/** Runs a request when its turn comes: at once, or within a limit of requests at a time. */
type Turn = <T>(send: () => Promise<T>) => Promise<T>;

/**
 * Requests through `fetch`, each when `turn` lets it (Node without undici: at most
 * `connections` at once, as undici's pool would allow; the wait counts against the deadline
 * there too).
 */
function fetchTransport(options: TransportOptions, fetch: FetchFunction, turn: Turn = (send) => send()): Transport {
  const base = `${options.url.origin}${basePath(options.url)}`;
  const pending = new Set<Promise<unknown>>();
  return {
    post(path, body, headers) {
      const answer = withTimeout(options.timeoutMs, (signal) =>
        turn(async () => {
          const response = await fetch(`${base}${path}`, {
            method: 'POST',
            headers: requestHeaders(options, headers),
            body: JSON.stringify(body),
            signal,
          });
          return { status: response.status, text: await response.text() };
        }),
      );
      pending.add(answer);
      void answer.catch(() => undefined).finally(() => pending.delete(answer));
      return answer;
    },
    async close() {
      await Promise.allSettled([...pending]);
    },
  };
}

type UndiciPool = import('undici').Pool;

/**
 * undici's Pool when the app has undici, else the runtime's fetch. Chosen on the first request,
 * not at import: memgate/client imports no node: module.
 */
function nodeTransport(options: TransportOptions): Transport {
  // Named through a variable, so that a bundler leaves the import to run time instead of
  // failing the build of an app that did not install undici.
  const load = (options.loadUndici ??
    (() => import(/* webpackIgnore: true */ /* @vite-ignore */ UNDICI))) as () => Promise<typeof import('undici')>;
  let chosen: Promise<Transport> | undefined;
  const choose = () =>
    (chosen ??= load().then(
      ({ Pool }) =>
        poolTransport(options, new Pool(options.url.origin, { connections: options.connections, pipelining: 1 })),
      async (error: unknown) => {
        // Only a missing undici means fetch: a broken one is said, not hidden.
        if (!notInstalled(error))
          throw new TransportFailure('network', `undici could not be loaded: ${describe(error)}`);
        const fetch = globalFetch();
        if (!fetch) throw new TransportFailure('network', 'neither undici nor fetch is there to reach memgate');
        const { default: pLimit } = await import('p-limit');
        return fetchTransport(options, fetch, pLimit(options.connections));
      },
    ));
  return {
    async post(path, body, headers) {
      // Loading undici is not memgate's time: the deadline starts once the transport is there.
      return (await choose()).post(path, body, headers);
    },
    async close() {
      // Without undici, the connections are Node's fetch's: it closes them once idle.
      const transport = await chosen?.catch(() => undefined);
      await transport?.close();
    },
  };
}

const UNDICI = 'undici';

function notInstalled(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
}

function poolTransport(options: TransportOptions, pool: UndiciPool): Transport {
  const prefix = basePath(options.url);
  return {
    post(path, body, headers) {
      return withTimeout(options.timeoutMs, async (signal) => {
        const answer = await pool.request({
          path: `${prefix}${path}`,
          method: 'POST',
          headers: requestHeaders(options, headers),
          body: JSON.stringify(body),
          signal,
        });
        return { status: answer.statusCode, text: await answer.body.text() };
      });
    },
    async close() {
      // Pool.close() waits for the requests under way, then closes its connections.
      await pool.close();
    },
  };
}
