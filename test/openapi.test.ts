// The OpenAPI document users read at /docs: a valid document, every route and answer
// described, and every example a real answer. Each example is asked of memgate again (with a
// real Memcached, or a dead or silent one where the example needs it) and compared.
import { readFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { compileErrors, validate } from '@readme/openapi-parser';
import { Ajv } from 'ajv';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { DEFAULTS } from '../src/config/defaults.js';
import { parsePolicyText } from '../src/config/policies.js';
import { parseRetention } from '../src/config/retention.js';
import type { ObservedDecision, SettledReservation } from '../src/counting/limiter.js';
import { graphiteReader } from '../src/usage/graphite-store.js';
import { inMemoryUsage } from '../src/usage/in-memory-usage.js';
import { createUsageHistory } from '../src/usage/usage-history.js';
import { createLimiter } from '../src/counting/limiter.js';
import { EXAMPLE_POLICY_VERSION } from '../src/http/examples.js';
import { reloadable } from '../src/counting/reloadable-limiter.js';
import { buildApp } from '../src/http/app.js';
import { createDrain } from '../src/http/drain.js';
import { createMetrics } from '../src/http/metrics.js';
import type { CounterStore } from '../src/store/counter-store.js';
import { createEmbeddedStore } from '../src/store/embedded-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';

/** The policy file the document's examples were made with, under the name they show. */
const POLICY_FILE = 'docs/api-policies.yaml';
const POLICY_TEXT = readFileSync(POLICY_FILE, 'utf8');
const TOKEN = 'openapi-test-admin-token';
/** MEMCACHED_MAX_IN_FLIGHT of the examples' memgate with a silent Memcached. */
const IN_FLIGHT = 100;
const OPENAPI_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

interface MediaType {
  schema?: object;
  example?: unknown;
  examples?: Record<string, { summary?: string; value: unknown }>;
}
interface Response {
  description: string;
  headers?: Record<string, unknown>;
  content?: Record<string, MediaType>;
}
interface Operation {
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: { name: string; schema: object; example?: unknown }[];
  requestBody?: { content: Record<string, MediaType> };
  responses: Record<string, Response>;
}
interface Document {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
}

const memcached = useMemcached();
const cleanups: (() => Promise<unknown>)[] = [];
let doc: Document;
let sharedStore: CounterStore;
/** The usage examples' time: 2026-11-23T10:00:30.250Z. */
const USAGE_NOW = Date.UTC(2026, 10, 23, 10, 0, 30, 250);
/** Every example's time: a whole second, so that a burst of checks falls within one. */
const NOW = Math.floor(Date.now() / 1000) * 1000;

beforeAll(async () => {
  // Generous deadline: on a loaded machine a healthy Memcached can stay silent past the
  // default 250 ms, and the examples that count would come back degraded.
  sharedStore = createMemcachedStore({ servers: memcached().servers, timeoutMs: 5000 });
  cleanups.push(() => sharedStore.close());
  await sharedStore.clock?.ready();
  doc = (await (await memgateOf('counting')).app.inject({ method: 'GET', url: '/docs/json' })).json<Document>();
});
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

// ---------------------------------------------------------------------------------------
// The memgates that answer the examples

/**
 * counting: docs/api-policies.yaml on a real Memcached, with admin routes and metrics.
 * storeDown: its only Memcached server refuses connections. failedOver: the second of its two
 * servers refuses connections, and its clients are counted on the first. storeSilent: its server accepts
 * and never answers (IN_FLIGHT calls may wait on it at once, each for the default 250 ms). draining: shutting down. nginx: the
 * gateway answers 403 and 401 and refuses unmatched paths. noGateway: no gateway section.
 * embedded: the in-process store. brokenFile: the policy file on disk has become invalid.
 * usage: usage history in an in-memory SQLite database, on a clock stopped at USAGE_NOW.
 * usageOff: no usage history (MEMGATE_USAGE_DB=off). graphiteDown: usage read from a
 * graphite-web that does not answer.
 */
type World =
  | 'counting'
  | 'storeDown'
  | 'failedOver'
  | 'storeSilent'
  | 'draining'
  | 'nginx'
  | 'noGateway'
  | 'embedded'
  | 'brokenFile'
  | 'usage'
  | 'usageOff'
  | 'graphiteDown';

interface Memgate {
  readonly app: FastifyInstance;
  /** Forgets every count and denial: a new limiter on new keys, as if nothing had been asked. */
  renew(): void;
}

const memgates = new Map<World, Promise<Memgate>>();

/** The memgate of this kind that replays share (building one is most of a replay's cost), closed after the tests. */
function memgateOf(kind: World): Promise<Memgate> {
  let memgate = memgates.get(kind);
  if (!memgate) memgates.set(kind, (memgate = world(kind, cleanups)));
  return memgate;
}

/** Runs `use` against a new memgate of this kind, closed afterwards. */
async function inWorld<T>(kind: World, use: (app: FastifyInstance) => Promise<T>): Promise<T> {
  const closing: (() => Promise<unknown>)[] = [];
  try {
    return await use((await world(kind, closing)).app);
  } finally {
    for (const close of closing.reverse()) await close();
  }
}

async function world(kind: World, closing: (() => Promise<unknown>)[]): Promise<Memgate> {
  const storeFor = await storesOf(kind, closing);
  const store = storeFor();
  const document = parseYaml(POLICY_TEXT) as { events: object; gateway: Record<string, unknown> };
  const policies =
    kind === 'nginx'
      ? { ...document, gateway: { ...document.gateway, denyStatus: 403, invalidStatus: 401, unmatched: 'deny' } }
      : kind === 'noGateway'
        ? { events: document.events }
        : parsePolicyText(POLICY_TEXT, POLICY_FILE);
  const metrics = createMetrics();
  const usage =
    kind === 'usage'
      ? usageHistory(Object.keys(document.events), closing)
      : kind === 'graphiteDown'
        ? { history: await unreachableGraphite(Object.keys(document.events), closing) }
        : undefined;
  const options = {
    now: () => NOW,
    // The version the examples name: a real one is a hash of the files, and would change with any edit.
    version: EXAMPLE_POLICY_VERSION,
    onDecision: (observed: ObservedDecision) => {
      metrics.onDecision(observed);
      if (observed.kind === 'check' && usage && 'recorder' in usage)
        usage.recorder.record(observed.event, observed.feature, observed.decision);
    },
    // As the service wires it: usage history keeps each settle's actual cost.
    onSettle: ({ event, cost }: SettledReservation) => {
      if (usage && 'recorder' in usage) usage.recorder.recordSettled(event, cost);
    },
  };
  const limiter = reloadable(createLimiter({ ...options, store, keyPrefix: uniquePrefix(), policies }));
  const fileOnDisk = kind === 'brokenFile' ? POLICY_TEXT.replace('window: 1m }', 'window: 1y }') : POLICY_TEXT;
  // As the service reloads: the file read again, under its name.
  const reload = () => {
    const next = parsePolicyText(fileOnDisk, POLICY_FILE);
    limiter.replace(createLimiter({ ...options, store, keyPrefix: uniquePrefix(), policies: next }));
    return Promise.resolve({ source: next.source, events: [...next.events.keys()] });
  };
  const drain = createDrain();
  const app = buildApp({
    validateResponses: true,
    limiter,
    store,
    metrics,
    drain,
    admin: { token: TOKEN, reload, now: () => NOW },
    maxEventLoopDelayMs: 0,
    ...(usage ? { usage: usage.history } : {}),
  });
  closing.push(() => app.close());
  await app.ready();
  if (kind === 'draining') drain.begin(app.server);
  const renew = () => {
    limiter.replace(createLimiter({ ...options, store: storeFor(), keyPrefix: uniquePrefix(), policies }));
  };
  return { app, renew };
}

/** Usage history as the service keeps it by default, in memory, on a clock stopped at USAGE_NOW. */
function usageHistory(events: readonly string[], closing: (() => Promise<unknown>)[]) {
  const usage = inMemoryUsage({ policyEvents: () => events, now: () => USAGE_NOW });
  closing.push(() => usage.close());
  return usage;
}

/** Usage history read from graphite-web at an address where nothing listens. */
async function unreachableGraphite(events: readonly string[], closing: (() => Promise<unknown>)[]) {
  const archives = parseRetention(DEFAULTS.usageRetention);
  if (typeof archives === 'string') throw new Error(archives);
  const reader = graphiteReader({ web: new URL(`http://${await closedPort()}`), archives });
  closing.push(() => reader.close());
  return createUsageHistory({ reader, archives, policyEvents: () => events, now: () => USAGE_NOW });
}

/**
 * The store a memgate of this kind counts in, each time it starts anew: the same one, but
 * for a silent server, where each start gets a store with no call waiting yet.
 */
async function storesOf(kind: World, closing: (() => Promise<unknown>)[]): Promise<() => CounterStore> {
  if (kind === 'embedded') {
    const store = createEmbeddedStore();
    closing.push(() => store.close());
    return () => store;
  }
  if (kind !== 'storeDown' && kind !== 'storeSilent' && kind !== 'failedOver') return () => sharedStore;
  const connect = (server: string) => {
    const store = createMemcachedStore({ servers: server, maxInFlight: IN_FLIGHT });
    closing.push(() => store.close());
    return store;
  };
  if (kind === 'storeSilent') {
    const server = await silentServer(closing);
    return () => connect(server);
  }
  const store = connect(kind === 'failedOver' ? `${memcached().servers},${await closedPort()}` : await closedPort());
  // As the service starts: it reads the server's clock first, and so learns it is down.
  await store.clock?.ready();
  return () => store;
}

async function listen(onConnection: (socket: Socket) => void): Promise<{ server: Server; address: string }> {
  const server = createServer(onConnection);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return { server, address: `127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` };
}

/** An address where nothing listens. */
async function closedPort(): Promise<string> {
  const { server, address } = await listen(() => undefined);
  await new Promise((resolve) => server.close(resolve));
  return address;
}

/** A server that accepts connections and never answers. */
async function silentServer(closing: (() => Promise<unknown>)[]): Promise<string> {
  const sockets = new Set<Socket>();
  const { server, address } = await listen((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  closing.push(
    () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(resolve);
      }),
  );
  return address;
}

// ---------------------------------------------------------------------------------------
// The request behind each example

interface Replay {
  readonly world: World;
  /** Asked first, on the same memgate; each may be made from the answers before it (a settle, from its reservation). */
  readonly before?: readonly (InjectOptions | ((earlier: readonly LightMyRequestResponse[]) => InjectOptions))[];
  /** The request, or how to make it from the answers to `before` (a lease's id). */
  readonly ask: InjectOptions | ((before: readonly LightMyRequestResponse[]) => InjectOptions);
  /** Asked this many times at once; the answer with the example's status is compared. */
  readonly burst?: number;
  /** exact; digits: every number and run of digits may differ (ports, clocks, seconds); lines: each line of the example is in the answer. */
  readonly compare?: 'exact' | 'digits' | 'lines';
  /** Documented headers this answer rightly lacks. */
  readonly absent?: readonly string[];
  /**
   * Needs a memgate of its own: it reads or leaves state a new limiter does not forget
   * (metrics, failed admin authentications).
   */
  readonly alone?: boolean;
}

const FEATURE = '203.0.113.7';
const RATE_LIMIT = ['RateLimit-Policy', 'RateLimit'];
const times = (count: number, ask: InjectOptions): InjectOptions[] => Array.from({ length: count }, () => ask);
const bearer = { authorization: `Bearer ${TOKEN}` };

/** A request of /check or /peek with these fields, in the query string (GET) or a JSON body (POST). */
function decisionAsk(method: 'GET' | 'POST', path: string, fields: Record<string, string | number>): InjectOptions {
  if (method === 'POST') return { method, url: path, payload: fields };
  return {
    method,
    url: `${path}?${new URLSearchParams(Object.entries(fields).map(([k, v]): [string, string] => [k, String(v)])).toString()}`,
  };
}

function decisionReplays(method: 'GET' | 'POST', path: '/check' | '/peek'): Record<string, Replay> {
  const op = `${method} ${path}`;
  const ask = (fields: Record<string, string | number>) => decisionAsk(method, path, fields);
  const login = { event: 'login', feature: FEATURE };
  const fiveLogins = times(5, decisionAsk(method, '/check', login));
  const input = {
    [`${op} 400 unknownEvent`]: { world: 'counting', ask: ask({ event: 'signup', feature: FEATURE }) },
    [`${op} 400 emptyEvent`]: { world: 'counting', ask: ask({ event: '', feature: FEATURE }) },
    [`${op} 400 emptyFeature`]: { world: 'counting', ask: ask({ event: 'login', feature: '' }) },
    [`${op} 400 featureTooLong`]: { world: 'counting', ask: ask({ event: 'login', feature: 'a'.repeat(1100) }) },
    [`${op} 400 invalidCost`]: { world: 'counting', ask: ask({ ...login, cost: 0 }) },
    [`${op} 400 unknownTier`]: {
      world: 'counting',
      ask: ask({ event: 'url_shorten', feature: FEATURE, tier: 'gold' }),
    },
    [`${op} 400 costExceedsLimit`]: { world: 'counting', ask: ask({ ...login, cost: 6 }) },
    [`${op} 503 overloaded`]: {
      world: 'storeSilent',
      ask: ask({ event: 'url_shorten', feature: 'user-42' }),
      burst: IN_FLIGHT + 1,
    },
  } satisfies Record<string, Replay>;
  const byVia: Record<string, Replay> =
    method === 'GET'
      ? {
          [`${op} 400 missingFeature`]: { world: 'counting', ask: { method, url: `${path}?event=login` } },
          [`${op} 400 unknownField`]: { world: 'counting', ask: ask({ ...login, user: '1' }) },
        }
      : {
          [`${op} 400 invalidJson`]: {
            world: 'counting',
            ask: {
              method,
              url: path,
              headers: { 'content-type': 'application/json' },
              payload: '{"event":"login","feature":"x"',
            },
          },
          [`${op} 400 notAnObject`]: { world: 'counting', ask: { method, url: path, payload: ['login'] } },
          [`${op} 400 featureNotString`]: {
            world: 'counting',
            ask: { method, url: path, payload: { event: 'login', feature: 42 } },
          },
          [`${op} 400 missingFeature`]: { world: 'counting', ask: { method, url: path, payload: { event: 'login' } } },
          [`${op} 413 payloadTooLarge`]: {
            world: 'counting',
            ask: { method, url: path, payload: { event: 'login', feature: 'a'.repeat(17_000) } },
          },
          [`${op} 415 unsupportedMediaType`]: {
            world: 'counting',
            ask: { method, url: path, headers: { 'content-type': 'text/plain' }, payload: 'event=login' },
          },
        };
  const degraded: Record<string, Replay> = {
    [`${op} 200 degradedAllowed`]: {
      world: 'storeDown',
      ask: ask({ event: 'url_shorten', feature: 'user-42' }),
      absent: RATE_LIMIT,
    },
    [`${op} 429 degradedDenied`]: { world: 'storeDown', ask: ask(login), absent: RATE_LIMIT },
  };
  const decisions: Record<string, Replay> =
    path === '/check'
      ? {
          [`${op} 200 allowed`]: { world: 'counting', ask: ask(login) },
          [`${op} 429 denied`]: { world: 'counting', before: fiveLogins, ask: ask(login) },
          [`${op} 400 reserveOff`]: { world: 'counting', ask: ask({ ...login, reserve: 3 }) },
          ...(method === 'POST'
            ? {
                [`${op} 200 allowedCost`]: {
                  world: 'counting',
                  ask: ask({ event: 'url_shorten', feature: 'user-42', cost: 3 }),
                },
                [`${op} 200 reserved`]: {
                  world: 'counting',
                  ask: ask({ event: 'url_shorten', feature: 'user-42', reserve: 20 }),
                  compare: 'digits',
                },
                [`${op} 200 holding`]: {
                  world: 'counting',
                  ask: ask({ event: 'export', feature: 'user-42' }),
                  compare: 'digits',
                },
              }
            : {}),
        }
      : {
          [`${op} 200 peekUntouched`]: { world: 'counting', ask: ask(login) },
          [`${op} 429 peekDenied`]: { world: 'counting', before: fiveLogins, ask: ask(login) },
        };
  return { ...input, ...byVia, ...degraded, ...decisions };
}

function gateReplays(method: string): Record<string, Replay> {
  const op = `${method.toUpperCase()} /gate`;
  const ask = (headers: Record<string, string | string[]>): InjectOptions => ({
    method: method.toUpperCase(),
    url: '/gate',
    headers,
  });
  const client = { 'x-forwarded-for': '192.0.2.10' };
  const login = ask({ 'x-original-uri': '/login', ...client });
  return {
    [`${op} 200 allowed`]: { world: 'counting', ask: login },
    [`${op} 200 unmatched`]: {
      world: 'counting',
      ask: ask({ 'x-original-uri': '/about', ...client }),
      absent: RATE_LIMIT,
    },
    [`${op} 200 degradedAllowed`]: {
      world: 'storeDown',
      ask: ask({ 'x-original-uri': '/api/links', ...client }),
      absent: RATE_LIMIT,
    },
    [`${op} 400 missingUri`]: { world: 'counting', ask: ask(client) },
    [`${op} 400 badEncoding`]: { world: 'counting', ask: ask({ 'x-original-uri': '/api/%zz', ...client }) },
    [`${op} 400 ambiguous`]: { world: 'counting', ask: ask({ 'x-original-uri': '/api/..;/login', ...client }) },
    [`${op} 400 clientNotAnIp`]: {
      world: 'counting',
      ask: ask({ 'x-original-uri': '/login', 'x-forwarded-for': 'not-an-ip' }),
    },
    [`${op} 401 unmatchedPath`]: { world: 'nginx', ask: ask({ 'x-original-uri': '/about', ...client }) },
    [`${op} 401 uriTwice`]: { world: 'nginx', ask: ask({ 'x-original-uri': ['/login', '/api/x'], ...client }) },
    [`${op} 403 denied`]: { world: 'nginx', before: times(5, login), ask: login },
    [`${op} 404 gatewayOff`]: { world: 'noGateway', ask: login },
    [`${op} 429 denied`]: { world: 'counting', before: times(5, login), ask: login },
    [`${op} 429 degradedDenied`]: { world: 'storeDown', ask: login, absent: RATE_LIMIT },
    [`${op} 503 overloaded`]: {
      world: 'storeSilent',
      ask: ask({ 'x-original-uri': '/api/links', ...client }),
      burst: IN_FLIGHT + 1,
    },
  };
}

const reset = (headers: Record<string, string>, payload: unknown): InjectOptions => ({
  method: 'POST',
  url: '/admin/reset',
  headers,
  payload: payload as string,
});
const wrongToken: InjectOptions = { method: 'POST', url: '/admin/reload', headers: { authorization: 'Bearer wrong' } };
const resetLogin = reset(bearer, { event: 'login', feature: FEATURE });

function leaseReplays(): Record<string, Replay> {
  const post = (url: string, payload: unknown, headers: Record<string, string> = {}): InjectOptions => ({
    method: 'POST',
    url,
    headers,
    payload: payload as string,
  });
  const user = { event: 'url_shorten', feature: 'user-42' };
  const takeTen = post('/lease', { ...user, units: 10 });
  const idOf = (answer: LightMyRequestResponse | undefined) => answer?.json<{ lease: { id: string } }>().lease.id ?? '';
  const reserveTwenty = post('/check', { ...user, reserve: 20 });
  const exporter = { event: 'export', feature: 'user-42' };
  const holdOne = post('/check', exporter);
  const slotOf = (answer: LightMyRequestResponse | undefined) => answer?.json<{ slot: { id: string } }>().slot.id ?? '';
  const reservationOf = (answer: LightMyRequestResponse | undefined) =>
    answer?.json<{ reservation: { id: string } }>().reservation.id ?? '';
  const giveBack = (unused: number) => (before: readonly LightMyRequestResponse[]) =>
    post('/lease/return', { ...user, id: idOf(before[0]), unused });
  const invalidJson = (url: string): Replay => ({
    world: 'counting',
    ask: post(url, '{"event":"url_shorten"', { 'content-type': 'application/json' }),
  });
  const refund = (payload: object, headers: Record<string, string> = bearer) => post('/admin/refund', payload, headers);
  return {
    'POST /lease 200 granted': { world: 'counting', ask: takeTen, compare: 'digits' },
    'POST /lease 429 denied': {
      world: 'counting',
      before: [post('/check', { ...user, cost: 100 })],
      ask: takeTen,
    },
    'POST /lease 400 leaseOff': {
      world: 'counting',
      ask: post('/lease', { event: 'login', feature: FEATURE, units: 3 }),
    },
    'POST /lease 400 unknownEvent': {
      world: 'counting',
      ask: post('/lease', { event: 'signup', feature: FEATURE, units: 3 }),
    },
    'POST /lease 400 invalidJson': invalidJson('/lease'),
    'POST /lease 503 overloaded': { world: 'storeSilent', ask: takeTen, burst: IN_FLIGHT + 1 },
    'POST /lease/return 200 returned': { world: 'counting', before: [takeTen], ask: giveBack(4) },
    'POST /lease/return 400 leaseOff': {
      world: 'counting',
      ask: post('/lease/return', {
        event: 'login',
        feature: FEATURE,
        id: `${NOW / 1000}.q8Yc3hJd0mWn2LxTf5RkAw`,
        unused: 0,
      }),
    },
    'POST /lease/return 400 unknownEvent': {
      world: 'counting',
      ask: post('/lease/return', { event: 'signup', feature: FEATURE, id: 'x', unused: 0 }),
    },
    'POST /lease/return 400 invalidJson': invalidJson('/lease/return'),
    'POST /lease/return 404 unknownLease': {
      world: 'counting',
      ask: post('/lease/return', { ...user, id: `${NOW / 1000}.q8Yc3hJd0mWn2LxTf5RkAw`, unused: 0 }),
    },
    'POST /lease/return 409 returnedTwice': {
      world: 'counting',
      before: [takeTen],
      // Twice at once: one is taken, the other refused.
      ask: giveBack(0),
      burst: 2,
    },
    'POST /lease/return 503 storeUnavailable': {
      world: 'storeSilent',
      ask: post('/lease/return', { ...user, id: `${NOW / 1000}.q8Yc3hJd0mWn2LxTf5RkAw`, unused: 0 }),
      compare: 'digits',
    },
    'POST /settle 200 settled': {
      world: 'counting',
      before: [reserveTwenty],
      ask: (before) => post('/settle', { ...user, id: reservationOf(before[0]), cost: 17 }),
    },
    'POST /settle 400 reserveOff': {
      world: 'counting',
      ask: post('/settle', { event: 'login', feature: FEATURE, id: `${NOW / 1000}.q8Yc3hJd0mWn2LxTf5RkAw`, cost: 1 }),
    },
    'POST /settle 400 unknownEvent': {
      world: 'counting',
      ask: post('/settle', { event: 'signup', feature: FEATURE, id: 'x', cost: 1 }),
    },
    'POST /settle 400 invalidJson': invalidJson('/settle'),
    'POST /settle 404 unknownReservation': {
      world: 'counting',
      ask: post('/settle', { ...user, id: `${NOW / 1000}.q8Yc3hJd0mWn2LxTf5RkAw`, cost: 1 }),
    },
    'POST /settle 409 settledTwice': {
      world: 'counting',
      before: [reserveTwenty],
      // Twice at once: one is taken, the other refused.
      ask: (before) => post('/settle', { ...user, id: reservationOf(before[0]), cost: 20 }),
      burst: 2,
    },
    'POST /settle 503 storeUnavailable': {
      world: 'storeSilent',
      ask: post('/settle', { ...user, id: `${NOW / 1000}.q8Yc3hJd0mWn2LxTf5RkAw`, cost: 1 }),
      compare: 'digits',
    },
    'POST /release 200 released': {
      world: 'counting',
      before: [holdOne],
      ask: (before) => post('/release', { ...exporter, id: slotOf(before[0]) }),
    },
    'POST /release 200 freeAlready': {
      world: 'counting',
      before: [holdOne, (before) => post('/release', { ...exporter, id: slotOf(before[0]) })],
      ask: (before) => post('/release', { ...exporter, id: slotOf(before[0]) }),
    },
    'POST /release 400 releaseOff': {
      world: 'counting',
      ask: post('/release', { event: 'login', feature: FEATURE, id: '1.1vdd71vim1' }),
    },
    'POST /release 400 unknownEvent': {
      world: 'counting',
      ask: post('/release', { event: 'signup', feature: FEATURE, id: '1.1vdd71vim1' }),
    },
    'POST /release 400 invalidJson': invalidJson('/release'),
    'POST /release 404 unknownSlot': {
      world: 'counting',
      ask: post('/release', { ...exporter, id: 'nope' }),
    },
    'POST /release 503 storeUnavailable': {
      world: 'storeSilent',
      ask: post('/release', { ...exporter, id: '1.1vdd71vim1' }),
      compare: 'digits',
    },
    'POST /lease/batch 200 mixed': {
      world: 'counting',
      before: [takeTen],
      ask: (before) =>
        post('/lease/batch', {
          return: [{ ...user, id: idOf(before[0]), unused: 4 }],
          take: [
            { ...user, units: 10 },
            { event: 'login', feature: FEATURE, units: 3 },
          ],
        }),
      compare: 'digits',
    },
    'POST /lease/batch 400 nothing': { world: 'counting', ask: post('/lease/batch', {}) },
    'POST /lease/batch 400 takeWithoutUnits': {
      world: 'counting',
      ask: post('/lease/batch', { take: [user] }),
    },
    'POST /lease/batch 413 payloadTooLarge': {
      world: 'counting',
      ask: post('/lease/batch', {
        take: Array.from({ length: 100 }, () => ({ event: 'url_shorten', feature: 'a'.repeat(17_000), units: 1 })),
      }),
    },
    'POST /admin/refund 200 refunded': {
      world: 'counting',
      ask: refund({ event: 'login', feature: FEATURE, at: NOW }),
    },
    'POST /admin/refund 400 unknownEvent': {
      world: 'counting',
      ask: refund({ event: 'signup', feature: FEATURE, at: NOW }),
    },
    'POST /admin/refund 400 missingFeature': { world: 'counting', ask: refund({ event: 'login', at: NOW }) },
    'POST /admin/refund 400 futureAt': {
      world: 'counting',
      ask: refund({ event: 'login', feature: FEATURE, at: NOW + 3_600_000 }),
    },
    'POST /admin/refund 401 unauthorized': {
      world: 'counting',
      ask: refund({ event: 'login', feature: FEATURE, at: NOW }, {}),
      alone: true,
    },
    'POST /admin/refund 429 tooManyFailures': {
      world: 'counting',
      before: times(10, wrongToken),
      ask: refund({ event: 'login', feature: FEATURE, at: NOW }),
      compare: 'digits',
      alone: true,
    },
    'POST /admin/refund 503 storeUnavailable': {
      world: 'storeSilent',
      ask: refund({ event: 'login', feature: FEATURE, at: NOW }),
      compare: 'digits',
    },
  };
}

function batchReplays(): Record<string, Replay> {
  const batch = (payload: unknown, headers: Record<string, string> = {}): Replay => ({
    world: 'counting',
    ask: { method: 'POST', url: '/check/batch', headers, payload: payload as string },
  });
  const login = { event: 'login', feature: FEATURE };
  return {
    'POST /check/batch 200 decided': batch([
      login,
      { event: 'url_shorten', feature: 'user-42', cost: 3 },
      { event: 'signup', feature: FEATURE },
    ]),
    'POST /check/batch 400 notAnArray': batch(login),
    'POST /check/batch 400 empty': batch([]),
    'POST /check/batch 400 itemMissingFeature': batch([login, { event: 'login' }]),
    'POST /check/batch 400 invalidJson': batch('[{"event":"login"', { 'content-type': 'application/json' }),
    'POST /check/batch 413 payloadTooLarge': batch(
      Array.from({ length: 100 }, () => ({ event: 'login', feature: 'a'.repeat(17_000) })),
    ),
    'POST /check/batch 415 unsupportedMediaType': batch('event=login', { 'content-type': 'text/plain' }),
  };
}

/** Each usage example in a memgate of its own, after 7 logins from FEATURE (5 allowed) and 2 from another client. */
function usageReplays(): Record<string, Replay> {
  const get = (url: string): InjectOptions => ({ method: 'GET', url });
  const post = (url: string, payload: object): InjectOptions => ({ method: 'POST', url, payload });
  const before = [
    ...times(7, get(`/check?event=login&feature=${FEATURE}`)),
    ...times(2, get('/check?event=login&feature=198.51.100.23')),
  ];
  const replay = (url: string, world: World = 'usage'): Replay => ({ world, before, ask: get(url), alone: true });
  return {
    'GET /usage 200 lastMinutes': replay('/usage?event=login&from=-5min&step=60'),
    'GET /usage 200 client': replay(`/usage?event=login&feature=${FEATURE}&from=-5min`),
    // A reservation of 20 settled at 17: the check counts in allowed, the settle in settled and settled_cost.
    'GET /usage 200 settled': {
      world: 'usage',
      before: [
        post('/check', { event: 'url_shorten', feature: 'user-42', reserve: 20 }),
        (earlier) => {
          const id = earlier[0]?.json<{ reservation: { id: string } }>().reservation.id ?? '';
          return post('/settle', { event: 'url_shorten', feature: 'user-42', id, cost: 17 });
        },
      ],
      ask: get('/usage?event=url_shorten&from=-5min&step=60'),
      alone: true,
    },
    'GET /usage 400 fromAfterUntil': replay('/usage?event=login&from=now&until=-1h'),
    'GET /usage 400 unknownEvent': replay('/usage?event=signup'),
    'GET /usage 400 badTime': replay('/usage?event=login&from=yesterday'),
    'GET /usage 400 tooManyPoints': replay('/usage?event=login&from=-30d&step=60'),
    'GET /usage 400 badStep': replay('/usage?event=login&step=0'),
    'GET /usage 404 off': replay('/usage?event=login', 'usageOff'),
    'GET /usage/top 200 lastHour': replay('/usage/top?event=login&from=-1h'),
    'GET /usage/top 400 unknownEvent': replay('/usage/top?event=signup'),
    'GET /usage/top 400 badLimit': replay('/usage/top?event=login&limit=0'),
    'GET /usage/top 404 off': replay('/usage/top?event=login', 'usageOff'),
    'GET /usage/events 200 recorded': replay('/usage/events'),
    'GET /usage/events 404 off': replay('/usage/events', 'usageOff'),
    'GET /dashboard 200 example': { world: 'counting', ask: { method: 'GET', url: '/dashboard' }, compare: 'lines' },
    'GET /usage 502 down': { ...replay('/usage?event=login', 'graphiteDown'), compare: 'digits' },
    'GET /usage/top 502 down': { ...replay('/usage/top?event=login', 'graphiteDown'), compare: 'digits' },
    'GET /usage/events 502 down': { ...replay('/usage/events', 'graphiteDown'), compare: 'digits' },
  };
}

const REPLAYS: Record<string, Replay> = {
  ...decisionReplays('GET', '/check'),
  ...decisionReplays('POST', '/check'),
  ...decisionReplays('GET', '/peek'),
  ...decisionReplays('POST', '/peek'),
  // HEAD answers have no body, so no examples.
  ...Object.fromEntries(OPENAPI_METHODS.filter((m) => m !== 'head').flatMap((m) => Object.entries(gateReplays(m)))),
  'GET /healthz 200 ok': { world: 'counting', ask: { method: 'GET', url: '/healthz' } },
  'GET /readyz 200 readyMemcached': { world: 'counting', ask: { method: 'GET', url: '/readyz' }, compare: 'digits' },
  'GET /readyz 200 readyEmbedded': { world: 'embedded', ask: { method: 'GET', url: '/readyz' } },
  'GET /readyz 200 failedOver': { world: 'failedOver', ask: { method: 'GET', url: '/readyz' }, compare: 'digits' },
  'GET /readyz 503 unavailable': { world: 'storeDown', ask: { method: 'GET', url: '/readyz' }, compare: 'digits' },
  'GET /readyz 503 draining': { world: 'draining', ask: { method: 'GET', url: '/readyz' }, absent: ['Retry-After'] },
  'GET /healthcheck 200 example': { world: 'counting', ask: { method: 'GET', url: '/healthcheck' }, compare: 'lines' },
  'GET /healthcheck 500 example': { world: 'draining', ask: { method: 'GET', url: '/healthcheck' }, compare: 'lines' },
  'GET /policies 200 loaded': { world: 'counting', ask: { method: 'GET', url: '/policies' } },
  'GET /metrics 200 example': {
    world: 'counting',
    before: times(6, { method: 'GET', url: `/check?event=login&feature=${FEATURE}` }),
    ask: { method: 'GET', url: '/metrics' },
    compare: 'lines',
    alone: true,
  },
  ...batchReplays(),
  ...leaseReplays(),
  ...usageReplays(),
  'POST /admin/reset 200 reset': { world: 'counting', ask: resetLogin },
  'POST /admin/reset 400 unknownEvent': {
    world: 'counting',
    ask: reset(bearer, { event: 'signup', feature: FEATURE }),
  },
  'POST /admin/reset 400 missingFeature': { world: 'counting', ask: reset(bearer, { event: 'login' }) },
  'POST /admin/reset 400 invalidJson': {
    world: 'counting',
    ask: reset({ ...bearer, 'content-type': 'application/json' }, '{"event":"login","feature":"x"'),
  },
  'POST /admin/reset 401 unauthorized': {
    world: 'counting',
    ask: reset({}, { event: 'login', feature: FEATURE }),
    alone: true,
  },
  'POST /admin/reset 413 payloadTooLarge': {
    world: 'counting',
    ask: reset(bearer, { event: 'login', feature: 'a'.repeat(17_000) }),
  },
  'POST /admin/reset 415 unsupportedMediaType': {
    world: 'counting',
    ask: reset({ ...bearer, 'content-type': 'text/plain' }, 'event=login'),
  },
  'POST /admin/reset 429 tooManyFailures': {
    world: 'counting',
    before: times(10, wrongToken),
    ask: resetLogin,
    compare: 'digits',
    alone: true,
  },
  'POST /admin/reset 503 storeUnavailable': { world: 'storeSilent', ask: resetLogin, compare: 'digits' },
  'POST /admin/reload 200 reloaded': {
    world: 'counting',
    ask: { method: 'POST', url: '/admin/reload', headers: bearer },
  },
  'POST /admin/reload 400 invalidPolicies': {
    world: 'brokenFile',
    ask: { method: 'POST', url: '/admin/reload', headers: bearer },
  },
  'POST /admin/reload 503 draining': {
    world: 'draining',
    ask: { method: 'POST', url: '/admin/reload', headers: bearer },
  },
  'POST /admin/reload 401 unauthorized': { world: 'counting', ask: wrongToken, alone: true },
  'POST /admin/reload 429 tooManyFailures': {
    world: 'counting',
    before: times(10, wrongToken),
    ask: { method: 'POST', url: '/admin/reload', headers: bearer },
    compare: 'digits',
    alone: true,
  },
};

// ---------------------------------------------------------------------------------------
// Reading the document

interface DocumentedExample {
  /** `METHOD /path status name`, as REPLAYS names it. */
  readonly key: string;
  readonly status: string;
  readonly response: Response;
  readonly mediaType: string;
  readonly schema: object | undefined;
  readonly value: unknown;
}

function operations(): [string, string, Operation][] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]): [string, string, Operation] => [method, path, operation]),
  );
}

function responseExamples(): DocumentedExample[] {
  return operations().flatMap(([method, path, operation]) =>
    Object.entries(operation.responses).flatMap(([status, response]) =>
      Object.entries(response.content ?? {}).flatMap(([mediaType, media]) => {
        const named = Object.entries(media.examples ?? {}).map(([name, example]) => [name, example.value] as const);
        const single = media.example === undefined ? [] : [['example', media.example] as const];
        return [...named, ...single].map(([name, value]) => ({
          key: `${method.toUpperCase()} ${path} ${status} ${name}`,
          status,
          response,
          mediaType,
          schema: media.schema,
          value,
        }));
      }),
    ),
  );
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Numbers and runs of digits masked: what an answer keeps whatever the clock, port or second. */
/** A lease's id: its second and random bits, different at every replay. */
const LEASE_ID = /^[0-9]+\.[A-Za-z0-9_-]{22}$/;
const SLOT_ID = /^\d+(?:-\d+)*\.[0-9a-z]{1,10}$/;

function masked(value: unknown): unknown {
  if (typeof value === 'number') return 0;
  if (typeof value === 'string') {
    if (LEASE_ID.test(value)) return '<lease id>';
    return SLOT_ID.test(value) ? '<slot id>' : value.replace(/\d+/g, '#');
  }
  if (Array.isArray(value)) return value.map(masked);
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, masked(inner)]));
  return value;
}

// ---------------------------------------------------------------------------------------

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.0 document (@readme/openapi-parser)', async () => {
    const result = await validate(structuredClone(doc) as never);
    expect(result.valid ? '' : compileErrors(result)).toBe('');
    expect(doc.openapi).toMatch(/^3\.0\./);
  });

  it('lists /gate once, with the methods OpenAPI can name, and says every other one is answered', async () => {
    expect(Object.keys(doc.paths).filter((path) => path.startsWith('/gate'))).toEqual(['/gate']);
    expect(Object.keys(doc.paths['/gate'] ?? {}).sort()).toEqual([...OPENAPI_METHODS].sort());
    expect(doc.paths['/gate']?.get?.description).toMatch(/every other one \(PROPFIND, PURGE, \.\.\.\) the same way/);
    // And it is so: a method OpenAPI cannot name is answered as GET is, /gate/{path} too.
    const headers = { 'x-original-uri': '/api/links', 'x-forwarded-for': '192.0.2.10' };
    const { app } = await memgateOf('counting');
    for (const [method, url] of [
      ['PROPFIND', '/gate'],
      ['PURGE', '/gate/api/links'],
    ] as const) {
      const answer = await app.inject({ method, url, headers });
      expect([method, answer.statusCode, answer.json<{ allowed: boolean }>().allowed]).toEqual([method, 200, true]);
    }
  });

  it('does not describe /docs itself', () => {
    expect(Object.keys(doc.paths).filter((path) => path.startsWith('/docs'))).toEqual([]);
  });

  it('gives every operation a summary, a description and a tag, and every answer a description of its own', () => {
    expect(operations().length).toBeGreaterThan(10);
    for (const [method, path, operation] of operations()) {
      const where = `${method.toUpperCase()} ${path}`;
      expect(operation.summary?.trim(), where).toBeTruthy();
      expect((operation.description ?? '').length, where).toBeGreaterThan(60);
      expect(operation.tags?.length, where).toBe(1);
      for (const [status, { description }] of Object.entries(operation.responses)) {
        expect(status, where).toMatch(/^[1-5]\d\d$/);
        expect([STATUS_CODES[Number(status)], 'Default Response', ''], `${where} ${status}`).not.toContain(description);
        expect(description.length, `${where} ${status}`).toBeGreaterThan(20);
      }
    }
  });

  it('gives every answer with a body an example of it', () => {
    for (const [method, path, operation] of operations()) {
      if (method === 'head') continue;
      for (const [status, response] of Object.entries(operation.responses)) {
        const examples = Object.values(response.content ?? {}).flatMap((media) => [
          ...Object.values(media.examples ?? {}),
          ...(media.example === undefined ? [] : [media.example]),
        ]);
        expect(examples.length, `${method.toUpperCase()} ${path} ${status}`).toBeGreaterThan(0);
      }
    }
  });

  it('has examples that fit their own schemas: requests, parameters and answers', () => {
    // `example` is OpenAPI's annotation in a schema (the document's, from `examples`).
    const ajv = new Ajv({ strict: true, allErrors: true, keywords: ['example'] });
    const fits = (schema: object | undefined, value: unknown, where: string) => {
      expect(schema, where).toBeDefined();
      const check = ajv.compile(schema as object);
      expect(check(value) ? [] : check.errors, where).toEqual([]);
    };
    const answers = responseExamples();
    expect(answers.length).toBeGreaterThan(50);
    for (const example of answers) fits(example.schema, example.value, example.key);
    for (const [method, path, operation] of operations()) {
      for (const parameter of operation.parameters ?? [])
        if (parameter.example !== undefined)
          fits(parameter.schema, parameter.example, `${method} ${path} ${parameter.name}`);
      for (const media of Object.values(operation.requestBody?.content ?? {}))
        fits(media.schema, media.example, `${method} ${path} body`);
    }
  });

  it('shows decisions as their status says, and errors in the one error shape', () => {
    const codes = new Set<string>();
    for (const { key, status, value } of responseExamples()) {
      if (!isObject(value)) continue;
      if (typeof value.allowed === 'boolean') {
        // 429 (and 403, a gateway's denyStatus) is a denial; 200 an admission.
        expect(value.allowed, key).toBe(status === '200');
        expect(['200', '403', '429'], key).toContain(status);
      }
      if ('error' in value) {
        expect(Number(status), key).toBeGreaterThanOrEqual(400);
        expect(Object.keys(value.error as object).sort(), key).toEqual(['code', 'message']);
        const { code, message } = value.error as { code: unknown; message: unknown };
        expect(code, key).toMatch(/^[a-z]+(?:_[a-z]+)*$/);
        expect(typeof message, key).toBe('string');
        codes.add(code as string);
      }
    }
    expect(codes.size).toBeGreaterThan(15);
  });

  it('names for each example the request that answers it, and no request without an example', () => {
    expect(
      responseExamples()
        .map((e) => e.key)
        .sort(),
    ).toEqual(Object.keys(REPLAYS).sort());
  });

  it('has examples that are what memgate answers', { timeout: 60_000 }, async () => {
    for (const example of responseExamples()) {
      const replay = REPLAYS[example.key];
      if (!replay) throw new Error(`no request for the example ${example.key}`);
      const ask = async (app: FastifyInstance) => {
        const earlier: LightMyRequestResponse[] = [];
        for (const before of replay.before ?? [])
          earlier.push(await app.inject(typeof before === 'function' ? before(earlier) : before));
        const request = typeof replay.ask === 'function' ? replay.ask(earlier) : replay.ask;
        return Promise.all(Array.from({ length: replay.burst ?? 1 }, () => app.inject(request)));
      };
      let answers;
      if (replay.alone) answers = await inWorld(replay.world, ask);
      else {
        const memgate = await memgateOf(replay.world);
        memgate.renew();
        answers = await ask(memgate.app);
      }
      const answer = answers.find((a) => String(a.statusCode) === example.status) ?? answers[0];
      expect(answer?.statusCode, example.key).toBe(Number(example.status));
      if (!answer) continue;
      expect(answer.headers['content-type'], example.key).toContain(example.mediaType);
      const compare = replay.compare ?? 'exact';
      if (compare === 'lines') {
        const lines = new Set(answer.body.split('\n'));
        for (const line of String(example.value).split('\n'))
          expect(lines.has(line), `${example.key}: ${line}`).toBe(true);
      } else {
        const body: unknown = answer.json();
        if (compare === 'digits') expect(masked(body), example.key).toEqual(masked(example.value));
        else expect(body, example.key).toEqual(example.value);
      }
      const documented = Object.keys(example.response.headers ?? {}).filter(
        (name) => !(replay.absent ?? []).includes(name),
      );
      for (const name of documented)
        expect(answer.headers[name.toLowerCase()], `${example.key}: ${name}`).toBeDefined();
      for (const name of replay.absent ?? [])
        expect(answer.headers[name.toLowerCase()], `${example.key}: ${name}`).toBeUndefined();
    }
  });
});
