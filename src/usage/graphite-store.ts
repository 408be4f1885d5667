import { createConnection } from 'node:net';
import type { Agent } from 'undici';
import { DEFAULTS } from '../config/defaults.js';
import type { Archive } from '../config/retention.js';
import { decodeNode, GraphiteLayout, storable } from './graphite-path.js';
import { coarsest } from './query-plan.js';
import {
  EVENT_COUNTS,
  type ClientCount,
  type EventCount,
  type EventRange,
  type Outcome,
  type SeriesPoint,
  type SeriesQuery,
  type TopClients,
  type TopQuery,
  type UsageBatch,
  type UsageStore,
  UsageStoreUnavailableError,
} from './usage-store.js';

export interface CarbonWriterOptions {
  /** Carbon's plaintext receiver (MEMGATE_GRAPHITE). */
  readonly carbon: { readonly host: string; readonly port: number };
  /** MEMGATE_GRAPHITE_INSTANCE: a node of this instance's own after `memgate`. Unset, none. */
  readonly instance?: string | undefined;
  /** How long connecting and handing carbon one batch may take. Default DEFAULTS.graphiteTimeoutMs. */
  readonly timeoutMs?: number;
  /** Told of an event or client whose node is too long for a whisper file name: it is not sent. */
  readonly onUnstorable?: (name: { readonly event: string; readonly feature?: string }) => void;
}

export interface GraphiteReaderOptions {
  /** graphite-web (MEMGATE_GRAPHITE_WEB), with any path prefix it is served under. */
  readonly web: URL;
  /** MEMGATE_GRAPHITE_INSTANCE: set, reads sum every instance's series. */
  readonly instance?: string | undefined;
  /** MEMGATE_USAGE_RETENTION: the span /usage/events reports. */
  readonly archives: readonly Archive[];
  /** How long one request to graphite-web may take. Default DEFAULTS.graphiteTimeoutMs. */
  readonly timeoutMs?: number;
  /** Seconds since the epoch. Default the system clock. */
  readonly nowSeconds?: () => number;
}

export type GraphiteUsageOptions = CarbonWriterOptions & GraphiteReaderOptions;

/**
 * Outcomes kept per client: a degraded decision ranks no client (see recorder.ts), and
 * shadow_denied and settles are counted per event only.
 */
const CLIENT_OUTCOMES = ['allowed', 'denied'] as const satisfies readonly Outcome[];

/** How much of an error page a message quotes. */
const QUOTED_CHARS = 200;

/**
 * Usage history in Graphite: batches go to carbon's plaintext receiver, queries to
 * graphite-web's render API. Both halves are also exported alone, for an instance that only
 * writes (MEMGATE_GRAPHITE without MEMGATE_GRAPHITE_WEB) or only reads.
 */
export function openGraphiteUsage(options: GraphiteUsageOptions): UsageStore {
  const writer = carbonWriter(options);
  const reader = graphiteReader(options);
  return { kind: 'graphite', ...writer, ...reader };
}

/**
 * Writes batches to carbon, one connection per batch: a flush every few seconds needs no
 * pool, and a carbon that went away shows at the next flush rather than on a socket that
 * died in between. A batch is taken once carbon has read it to the end and closed.
 */
export function carbonWriter({
  carbon,
  instance,
  timeoutMs = DEFAULTS.graphiteTimeoutMs,
  onUnstorable,
}: CarbonWriterOptions): Pick<UsageStore, 'write'> {
  const layout = new GraphiteLayout(instance);
  return {
    write: async (batch) => {
      const text = plaintextLines(batch, layout, onUnstorable).join('');
      if (text !== '') await send(carbon, text, timeoutMs);
    },
  };
}

/**
 * The batch as carbon's plaintext protocol: `path count epoch`, one line per path and
 * second with its whole count. Whisper keeps the last value written to a slot, so a batch
 * written twice counts once (the recorder puts each second and minute in one batch only).
 * A zero is not written: no line and a line of 0 read the same, and whisper files cost
 * disk from their first point.
 */
export function plaintextLines(
  batch: UsageBatch,
  layout: GraphiteLayout,
  onUnstorable?: CarbonWriterOptions['onUnstorable'],
): string[] {
  const lines: string[] = [];
  for (const row of batch.seconds) {
    if (!storable(row.event)) {
      onUnstorable?.({ event: row.event });
      continue;
    }
    for (const outcome of EVENT_COUNTS) {
      const count = row[outcome] ?? 0;
      if (count > 0) lines.push(`${layout.eventPath(row.event, outcome)} ${count} ${row.t}\n`);
    }
  }
  for (const minute of batch.minutes) {
    if (!storable(minute.event)) continue; // told with its seconds, in this batch or an earlier one
    for (const outcome of CLIENT_OUTCOMES) {
      for (const { feature, count } of minute[outcome]) {
        if (!storable(feature)) onUnstorable?.({ event: minute.event, feature });
        else if (count > 0) lines.push(`${layout.clientPath(minute.event, feature, outcome)} ${count} ${minute.t}\n`);
      }
    }
  }
  return lines;
}

/** Hands `text` to carbon and resolves once carbon has closed after reading it all. */
function send({ host, port }: CarbonWriterOptions['carbon'], text: string, timeoutMs: number): Promise<void> {
  const label = `carbon at ${host}:${port}`;
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host, port });
    const timer = setTimeout(() => {
      socket.destroy(new UsageStoreUnavailableError(`${label} did not take the batch within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once('connect', () => socket.end(text));
    // Carbon writes nothing back; reading lets its end of the connection arrive.
    socket.resume();
    socket.once('error', (error) => {
      clearTimeout(timer);
      reject(
        error instanceof UsageStoreUnavailableError
          ? error
          : new UsageStoreUnavailableError(`${label}: ${error.message}`, { cause: error }),
      );
    });
    // Carbon closes once it has read to our end: every line is in its cache by then.
    socket.once('close', (hadError) => {
      clearTimeout(timer);
      if (!hadError) resolve();
    });
  });
}

/**
 * Reads usage back through graphite-web: /render for points and clients, /metrics/find for
 * events. Each answer is what carbon holds, flushed to whisper or still in its cache
 * (graphite-web asks carbon's cache through CARBONLINK_HOSTS).
 */
export function graphiteReader({
  web,
  instance,
  archives,
  timeoutMs = DEFAULTS.graphiteTimeoutMs,
  nowSeconds = () => Date.now() / 1000,
}: GraphiteReaderOptions): Pick<UsageStore, 'series' | 'top' | 'events' | 'close'> {
  const layout = new GraphiteLayout(instance);
  const base = new URL(web);
  // Relative to graphite-web's own path: `http://host/graphite` serves /graphite/render.
  if (!base.pathname.endsWith('/')) base.pathname += '/';
  // undici is loaded with the first read, not with this module: every service imports it
  // (open-usage.ts), few read graphite-web, and loading undici took about 60 ms of each start.
  let http: Promise<{ agent: Agent; request: typeof import('undici').request }> | undefined;
  let closed = false;
  const loadHttp = () => {
    if (closed) return Promise.reject(new Error('the reader is closed'));
    // A load that failed (say, out of file handles) is tried again by the next read.
    return (http ??= import('undici').then(
      ({ Agent, request }) => ({ agent: new Agent({ connect: { timeout: timeoutMs } }), request }),
      (error: unknown) => {
        http = undefined;
        throw error;
      },
    ));
  };

  async function getJson(path: string, params: URLSearchParams): Promise<unknown> {
    const url = new URL(path, base);
    url.search = params.toString();
    let status: number;
    let text: string;
    try {
      const { agent, request } = await loadHttp();
      const response = await request(url, { dispatcher: agent, signal: AbortSignal.timeout(timeoutMs) });
      status = response.statusCode;
      text = await response.body.text();
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new UsageStoreUnavailableError(`graphite-web at ${base.origin}: ${reason}`, { cause: error });
    }
    if (status !== 200) {
      throw new UsageStoreUnavailableError(
        `graphite-web answered ${status} to /${path}: ${text.replace(/\s+/g, ' ').slice(0, QUOTED_CHARS)}`,
      );
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new UsageStoreUnavailableError(`graphite-web answered /${path} with something other than JSON`);
    }
  }

  /** `targets` over [from, until), and graphite's series for them. */
  async function render(
    targets: readonly string[],
    range: { from: number; until: number },
    extra: Record<string, string> = {},
  ): Promise<RenderSeries[]> {
    const params = new URLSearchParams({
      // Whisper answers the slots after `from` up to the one holding `until`: one second
      // earlier each, the slots from `from` to before `until`.
      from: String(range.from - 1),
      until: String(range.until - 1),
      format: 'json',
      // A slot or step with any point is a sum, whatever graphite-web's DEFAULT_XFILES_FACTOR.
      xFilesFactor: '0',
      // A point carbon took a moment ago is in the answer, not a minute-old cached render.
      noCache: 'true',
      ...extra,
    });
    for (const target of targets) params.append('target', target);
    return renderSeries(await getJson('render', params));
  }

  return {
    async series(query) {
      const outcomes = query.feature === undefined ? EVENT_COUNTS : CLIENT_OUTCOMES;
      const targets = outcomes.map((outcome) => seriesTarget(layout, query, outcome));
      // A client's curve: also the event's counts and every named client's, per step.
      if (query.feature !== undefined) targets.push(...unnamedTargets(layout, query));
      return pointsOf(await render(targets, query), query);
    },

    async top({ event, from, until, limit, include }: TopQuery): Promise<TopClients> {
      // maxDataPoints=1: graphite-web consolidates each client's whole range into one point,
      // by the sum consolidateBy asks for.
      const found = await render([topTarget(layout, event)], { from, until }, { maxDataPoints: '1' });
      return rankClients(found, limit, include?.());
    },

    async events() {
      const nodes = findNodes(await getJson('metrics/find', new URLSearchParams({ query: layout.eventsQuery })));
      // Graphite keeps no cheap record of when a series began: every event is reported over
      // the whole retention, up to now.
      const now = Math.floor(nowSeconds());
      const from = now - coarsest(archives).keepSeconds;
      const events = new Set<string>();
      for (const { text, leaf } of nodes) {
        // An event is a branch (its outcomes below it); a node no event encodes to is not memgate's.
        const event = leaf ? undefined : decodeNode(text);
        if (event !== undefined) events.add(event);
      }
      return [...events].sort().map((event): EventRange => ({ event, from, until: now + 1 }));
    },

    close: async () => {
      closed = true;
      const loaded = await http?.catch(() => undefined);
      await loaded?.agent.close();
    },
  };
}

/** One series of a /render answer in JSON. */
export interface RenderSeries {
  readonly target: string;
  readonly datapoints: readonly (readonly [number | null, number])[];
}

/**
 * The render target of one outcome of a query: its series (every instance's, summed),
 * summed into the query's steps by summarize, whose buckets start at multiples of the step
 * as memgate's do, and named after the outcome. Not maxDataPoints: its buckets start at a
 * start it nudges and drop points before it.
 */
export function seriesTarget(layout: GraphiteLayout, query: SeriesQuery, outcome: EventCount): string {
  const path =
    query.feature === undefined
      ? layout.eventPattern(query.event, outcome)
      : layout.clientPattern(query.event, query.feature, outcome);
  const series = layout.summed ? `sumSeries(${path})` : path;
  return `alias(summarize(${series},"${query.step}s","sum",false),"${outcome}")`;
}

/**
 * The render target of every client of an event, allowed and denied: one series per client
 * and outcome (every instance's, summed), named `<client node>.<outcome>`, consolidated by sum.
 */
export function topTarget(layout: GraphiteLayout, event: string): string {
  const paths = layout.clientPattern(event, undefined, `{${CLIENT_OUTCOMES.join(',')}}`);
  const client = layout.clientIndex;
  const series = layout.summed ? `groupByNodes(${paths},"sumSeries",${client},${client + 1})` : paths;
  // groupByNodes names a series by its nodes; aliasByNode reads them back from under consolidateBy's name.
  return `aliasByNode(consolidateBy(${series},"sum"),${layout.summed ? '0,1' : `${client},${client + 1}`})`;
}

/** One point per step from `from` while before `until`, zero-filled: graphite's points summed into them. */
/**
 * What a client's curve reads besides its own series, per step and outcome: the event's
 * count (`event.<outcome>`) and the sum of every client the history names (`named.<outcome>`).
 */
export function unnamedTargets(layout: GraphiteLayout, query: SeriesQuery): string[] {
  return CLIENT_OUTCOMES.flatMap((outcome) => [
    `alias(summarize(sumSeries(${layout.eventPattern(query.event, outcome)}),"${query.step}s","sum",false),"event.${outcome}")`,
    `alias(summarize(sumSeries(${layout.clientPattern(query.event, undefined, outcome)}),"${query.step}s","sum",false),"named.${outcome}")`,
  ]);
}

export function pointsOf(found: readonly RenderSeries[], { from, until, step, feature }: SeriesQuery): SeriesPoint[] {
  const points: Mutable<SeriesPoint>[] = [];
  for (let t = from; t < until; t += step)
    points.push({ t, allowed: 0, denied: 0, degraded: 0, shadow_denied: 0, settled: 0, settled_cost: 0 });
  const unnamed = points.map(() => ({ allowed: 0, denied: 0 }));
  for (const { target, datapoints } of found) {
    const [kind, outcome = ''] = target.includes('.') ? target.split('.') : ['own', target];
    if (!isEventCount(outcome)) continue;
    for (const [value, t] of datapoints) {
      // A point graphite keeps coarser than the step counts in the step it starts in.
      if (value === null || t < from || t >= until) continue;
      const index = Math.floor((t - from) / step);
      const point = points[index];
      const counts = unnamed[index];
      if (!point || !counts) continue;
      if (kind === 'own') point[outcome] += value;
      else if (outcome === 'allowed' || outcome === 'denied') counts[outcome] += kind === 'event' ? value : -value;
    }
  }
  if (feature !== undefined) {
    points.forEach((point, index) => {
      const counts = unnamed[index] as { allowed: number; denied: number };
      point.unnamed = { allowed: counts.allowed, denied: counts.denied };
    });
  }
  return points;
}

/** The clients of a top target's answer, most first (ties by name), at most `limit` of each outcome. */
export function rankClients(
  found: readonly RenderSeries[],
  limit: number,
  include: readonly string[] = [],
): TopClients {
  const counts = { allowed: new Map<string, number>(), denied: new Map<string, number>() };
  for (const { target, datapoints } of found) {
    const dot = target.lastIndexOf('.');
    if (dot < 0) continue;
    const feature = decodeNode(target.slice(0, dot));
    const outcome = target.slice(dot + 1);
    if (feature === undefined || (outcome !== 'allowed' && outcome !== 'denied')) continue;
    const total = datapoints.reduce((sum, [value]) => sum + (value ?? 0), 0);
    counts[outcome].set(feature, (counts[outcome].get(feature) ?? 0) + total);
  }
  // The first `limit`, and any client of `include` below them (see TopQuery).
  const wanted = new Set(include);
  const ranked = (outcome: 'allowed' | 'denied'): ClientCount[] =>
    [...counts[outcome]]
      .filter(([, count]) => count > 0)
      .map(([feature, count]) => ({ feature, count }))
      .sort((a, b) => b.count - a.count || (a.feature < b.feature ? -1 : 1))
      .filter(({ feature }, rank) => rank < limit || wanted.has(feature));
  return { allowed: ranked('allowed'), denied: ranked('denied') };
}

/** A /render answer in JSON, or UsageStoreUnavailableError when it is something else. */
export function renderSeries(answer: unknown): RenderSeries[] {
  if (!Array.isArray(answer) || !answer.every(isRenderSeries)) {
    throw new UsageStoreUnavailableError('graphite-web answered /render with JSON that is not a list of series');
  }
  // Counts are whole and not negative: anything else is a Graphite that averages (or worse),
  // which must be said, not shown as a curve.
  for (const { target, datapoints } of answer) {
    const bad = datapoints.find(([value]) => value !== null && !(Number.isSafeInteger(value) && value >= 0));
    if (bad) {
      throw new UsageStoreUnavailableError(
        `graphite-web answered ${String(bad[0])} for ${target}, which is not a count: is storage-aggregation.conf's aggregationMethod sum for memgate's paths (examples/graphite)?`,
      );
    }
  }
  return answer;
}

/** The nodes of a /metrics/find answer (treejson), or UsageStoreUnavailableError when it is something else. */
function findNodes(answer: unknown): { text: string; leaf: boolean }[] {
  if (!Array.isArray(answer)) {
    throw new UsageStoreUnavailableError('graphite-web answered /metrics/find with JSON that is not a list of nodes');
  }
  return answer.flatMap((node: unknown) => {
    if (typeof node !== 'object' || node === null) return [];
    const { text, leaf } = node as { text?: unknown; leaf?: unknown };
    return typeof text === 'string' ? [{ text, leaf: leaf === 1 || leaf === true }] : [];
  });
}

function isRenderSeries(value: unknown): value is RenderSeries {
  if (typeof value !== 'object' || value === null) return false;
  const { target, datapoints } = value as { target?: unknown; datapoints?: unknown };
  return (
    typeof target === 'string' &&
    Array.isArray(datapoints) &&
    datapoints.every(
      (point: unknown) =>
        Array.isArray(point) &&
        point.length === 2 &&
        (point[0] === null || typeof point[0] === 'number') &&
        typeof point[1] === 'number',
    )
  );
}

function isEventCount(name: string): name is EventCount {
  return (EVENT_COUNTS as readonly string[]).includes(name);
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
