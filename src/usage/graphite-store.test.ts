// The Graphite store's own logic: the lines it sends, the targets it asks for, and how it
// reads answers back, against stand-in sockets. test/graphite.test.ts runs it against a
// real carbon and graphite-web.
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parseRetention, type Archive } from '../config/retention.js';
import { GraphiteLayout } from './graphite-path.js';
import {
  carbonWriter,
  graphiteReader,
  plaintextLines,
  pointsOf,
  rankClients,
  renderSeries,
  seriesTarget,
  topTarget,
  unnamedTargets,
} from './graphite-store.js';
import { UsageStoreUnavailableError, type UsageBatch } from './usage-store.js';

const ARCHIVES = parseRetention('1s:6h,1m:30d,1h:2y') as readonly Archive[];
const T = 1_795_000_020; // a minute's first second

const batch: UsageBatch = {
  instance: 'process-uuid',
  sequence: 3,
  seconds: [
    // 3 of the 5 allowed over a shadow limit.
    { event: 'login', t: T, allowed: 5, denied: 2, degraded: 0, shadow_denied: 3 },
    // Left out, shadow_denied is 0: a writer whose events have no shadow limits.
    { event: 'login', t: T + 1, allowed: 0, denied: 0, degraded: 4 },
    // Two reservations settled, at a cost of 1,700 together; and one settled at a cost of 0.
    { event: 'login', t: T + 2, allowed: 0, denied: 0, degraded: 0, settled: 2, settled_cost: 1700 },
    { event: 'login', t: T + 3, allowed: 0, denied: 0, degraded: 0, settled: 1, settled_cost: 0 },
    { event: 'url.shorten', t: T, allowed: 1, denied: 0, degraded: 0 },
  ],
  minutes: [
    {
      event: 'login',
      t: T,
      allowed: [
        { feature: 'alice@example.com', count: 4 },
        { feature: '2001:db8::1', count: 1 },
      ],
      denied: [{ feature: 'alice@example.com', count: 2 }],
    },
  ],
};

describe('plaintextLines', () => {
  it('writes each path and second once with its whole count, clients at the minute, no zeros', () => {
    expect(plaintextLines(batch, new GraphiteLayout(undefined))).toEqual([
      `memgate.login.allowed 5 ${T}\n`,
      `memgate.login.denied 2 ${T}\n`,
      `memgate.login.shadow_denied 3 ${T}\n`,
      `memgate.login.degraded 4 ${T + 1}\n`,
      `memgate.login.settled 2 ${T + 2}\n`,
      `memgate.login.settled_cost 1700 ${T + 2}\n`,
      // A settle of cost 0 is a settle: counted, with no line of 0 for its cost.
      `memgate.login.settled 1 ${T + 3}\n`,
      `memgate.url_2eshorten.allowed 1 ${T}\n`,
      `memgate.login.clients.alice_40example_2ecom.allowed 4 ${T}\n`,
      `memgate.login.clients.2001_3adb8_3a_3a1.allowed 1 ${T}\n`,
      `memgate.login.clients.alice_40example_2ecom.denied 2 ${T}\n`,
    ]);
  });

  it('puts the instance node after memgate when MEMGATE_GRAPHITE_INSTANCE is set', () => {
    const lines = plaintextLines(batch, new GraphiteLayout('web-1'));
    expect(lines).toHaveLength(11);
    for (const line of lines) expect(line).toMatch(/^memgate\.web-1\.(login|url_2eshorten)\./);
  });

  it('leaves out a client whose node no file system could name, and says so', () => {
    const told: unknown[] = [];
    const long = 'é'.repeat(43); // 86 bytes of UTF-8, 258 characters escaped
    const lines = plaintextLines(
      {
        ...batch,
        seconds: [],
        minutes: [{ event: 'login', t: T, allowed: [{ feature: long, count: 9 }], denied: [] }],
      },
      new GraphiteLayout(undefined),
      (name) => told.push(name),
    );
    expect(lines).toEqual([]);
    expect(told).toEqual([{ event: 'login', feature: long }]);
  });
});

describe('render targets', () => {
  const query = { event: 'url.shorten', from: T, until: T + 600, step: 60, resolution: 1 };

  it('sums each outcome into the steps, named after it', () => {
    expect(seriesTarget(new GraphiteLayout(undefined), query, 'denied')).toBe(
      'alias(summarize(memgate.url_2eshorten.denied,"60s","sum",false),"denied")',
    );
    expect(seriesTarget(new GraphiteLayout(undefined), { ...query, feature: 'a b' }, 'allowed')).toBe(
      'alias(summarize(memgate.url_2eshorten.clients.a_20b.allowed,"60s","sum",false),"allowed")',
    );
  });

  it("reads an event's shadow_denied as a series of its own, like degraded", () => {
    expect(seriesTarget(new GraphiteLayout(undefined), query, 'shadow_denied')).toBe(
      'alias(summarize(memgate.url_2eshorten.shadow_denied,"60s","sum",false),"shadow_denied")',
    );
  });

  it("reads an event's settles and their costs as series of their own, summed into the steps", () => {
    expect(seriesTarget(new GraphiteLayout(undefined), query, 'settled')).toBe(
      'alias(summarize(memgate.url_2eshorten.settled,"60s","sum",false),"settled")',
    );
    expect(seriesTarget(new GraphiteLayout('a'), query, 'settled_cost')).toBe(
      'alias(summarize(sumSeries(memgate.*.url_2eshorten.settled_cost),"60s","sum",false),"settled_cost")',
    );
  });

  it('sums every instance first when MEMGATE_GRAPHITE_INSTANCE is set', () => {
    expect(seriesTarget(new GraphiteLayout('a'), query, 'allowed')).toBe(
      'alias(summarize(sumSeries(memgate.*.url_2eshorten.allowed),"60s","sum",false),"allowed")',
    );
  });

  it('asks for every client of the event, named by its node and outcome', () => {
    expect(topTarget(new GraphiteLayout(undefined), 'login')).toBe(
      'aliasByNode(consolidateBy(memgate.login.clients.*.{allowed,denied},"sum"),3,4)',
    );
    expect(topTarget(new GraphiteLayout('a'), 'login')).toBe(
      'aliasByNode(consolidateBy(groupByNodes(memgate.*.login.clients.*.{allowed,denied},"sumSeries",4,5),"sum"),0,1)',
    );
  });
});

describe('pointsOf', () => {
  const query = { event: 'login', from: T, until: T + 180, step: 60, resolution: 1 };

  it('sums the points into steps, null as nothing, one point per step from `from` while before `until`', () => {
    const points = pointsOf(
      [
        {
          target: 'allowed',
          datapoints: [
            [3, T],
            [null, T + 60],
            [4, T + 120],
          ],
        },
        { target: 'denied', datapoints: [[1, T + 60]] },
        { target: 'shadow_denied', datapoints: [[2, T + 120]] },
        { target: 'settled', datapoints: [[3, T + 60]] },
        { target: 'settled_cost', datapoints: [[4100, T + 60]] },
      ],
      query,
    );
    const none = { settled: 0, settled_cost: 0 };
    expect(points).toEqual([
      { t: T, allowed: 3, denied: 0, degraded: 0, shadow_denied: 0, ...none },
      { t: T + 60, allowed: 0, denied: 1, degraded: 0, shadow_denied: 0, settled: 3, settled_cost: 4100 },
      { t: T + 120, allowed: 4, denied: 0, degraded: 0, shadow_denied: 2, ...none },
    ]);
  });

  it("gives a client's curve what the event counted for clients it does not name, per step and outcome", () => {
    const points = pointsOf(
      [
        { target: 'allowed', datapoints: [[2, T]] },
        {
          target: 'event.allowed',
          datapoints: [
            [10, T],
            [3, T + 60],
          ],
        },
        {
          target: 'named.allowed',
          datapoints: [
            [6, T],
            [3, T + 60],
          ],
        },
        { target: 'event.denied', datapoints: [[4, T + 120]] },
      ],
      { ...query, feature: 'alice' },
    );
    const none = { degraded: 0, shadow_denied: 0, settled: 0, settled_cost: 0 };
    expect(points).toEqual([
      { t: T, allowed: 2, denied: 0, ...none, unnamed: { allowed: 4, denied: 0 } },
      { t: T + 60, allowed: 0, denied: 0, ...none, unnamed: { allowed: 0, denied: 0 } },
      { t: T + 120, allowed: 0, denied: 0, ...none, unnamed: { allowed: 0, denied: 4 } },
    ]);
    // The event's own curve has no such field, and ignores those series.
    expect(pointsOf([{ target: 'event.allowed', datapoints: [[10, T]] }], query)[0]).toEqual({
      t: T,
      allowed: 0,
      denied: 0,
      degraded: 0,
      shadow_denied: 0,
      settled: 0,
      settled_cost: 0,
    });
  });

  it('names every target a client curve reads', () => {
    expect(unnamedTargets(new GraphiteLayout(undefined), { ...query, feature: 'alice' })).toEqual([
      'alias(summarize(sumSeries(memgate.login.allowed),"60s","sum",false),"event.allowed")',
      'alias(summarize(sumSeries(memgate.login.clients.*.allowed),"60s","sum",false),"named.allowed")',
      'alias(summarize(sumSeries(memgate.login.denied),"60s","sum",false),"event.denied")',
      'alias(summarize(sumSeries(memgate.login.clients.*.denied),"60s","sum",false),"named.denied")',
    ]);
  });

  it('adds points finer than the step into theirs, and drops those outside the range', () => {
    const points = pointsOf(
      [
        {
          target: 'degraded',
          datapoints: [
            [9, T - 1],
            [1, T],
            [2, T + 59],
            [5, T + 61],
            [7, T + 180],
          ],
        },
        { target: 'something else', datapoints: [[100, T]] },
      ],
      query,
    );
    expect(points.map((point) => point.degraded)).toEqual([3, 5, 0]);
    expect(points.map((point) => point.allowed)).toEqual([0, 0, 0]);
  });

  it('zero-fills a range graphite knows nothing of, the last step cut at `until`', () => {
    expect(pointsOf([], { ...query, until: T + 121 }).map((point) => point.t)).toEqual([T, T + 60, T + 120]);
    const cut = pointsOf(
      [
        {
          target: 'allowed',
          datapoints: [
            [1, T + 120],
            [2, T + 121],
          ],
        },
      ],
      { ...query, until: T + 121 },
    );
    expect(cut.map((point) => point.allowed)).toEqual([0, 0, 1]);
  });
});

describe('rankClients', () => {
  it('decodes the clients, most first, ties by name, at most `limit`, none with nothing', () => {
    const top = rankClients(
      [
        { target: 'bob.allowed', datapoints: [[3, T]] },
        { target: 'alice_40example_2ecom.allowed', datapoints: [[5, T]] },
        { target: 'carol.allowed', datapoints: [[3, T]] },
        { target: 'dave.allowed', datapoints: [[null, T]] },
        { target: 'bob.denied', datapoints: [[2, T]] },
        { target: 'not_an_escape.denied', datapoints: [[50, T]] },
      ],
      3,
    );
    expect(top).toEqual({
      allowed: [
        { feature: 'alice@example.com', count: 5 },
        { feature: 'bob', count: 3 },
        { feature: 'carol', count: 3 },
      ],
      denied: [{ feature: 'bob', count: 2 }],
    });
    expect(rankClients([{ target: 'bob.allowed', datapoints: [[3, T]] }], 0).allowed).toEqual([]);
    // Past the limit only for a client the caller adds memory to; a target with no outcome is none.
    const found = [
      { target: 'bob.allowed', datapoints: [[3, T]] as [number, number][] },
      { target: 'carol.allowed', datapoints: [[1, T]] as [number, number][] },
      { target: 'allowed', datapoints: [[9, T]] as [number, number][] },
    ];
    expect(rankClients(found, 1, ['carol']).allowed).toEqual([
      { feature: 'bob', count: 3 },
      { feature: 'carol', count: 1 },
    ]);
  });
});

describe('renderSeries', () => {
  it.each([1.5, -7, 1e308, 1e21])('refuses %s, which is not a count (a Graphite that averages, or worse)', (value) => {
    expect(() => renderSeries([{ target: 'allowed', datapoints: [[value, 60]] }])).toThrow(
      /is not a count: is storage-aggregation.conf/,
    );
  });

  it.each([{ error: 'x' }, [{ target: 'a' }], [{ target: 'a', datapoints: [[1]] }], [{ target: 1, datapoints: [] }]])(
    'refuses %j',
    (answer) => {
      expect(() => renderSeries(answer)).toThrow(UsageStoreUnavailableError);
    },
  );
});

describe('carbonWriter', () => {
  let server: Server | undefined;
  afterEach(() => {
    server?.close();
    server = undefined;
  });

  /** A TCP server on a free port, answering connections with `onConnection`. */
  async function listen(onConnection: Parameters<typeof createServer>[1]): Promise<number> {
    const listening = createServer(onConnection);
    server = listening;
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    return (listening.address() as AddressInfo).port;
  }

  it('hands the lines over and resolves once the receiver has read them to the end', async () => {
    let received = '';
    const port = await listen((socket) => {
      socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
      socket.on('end', () => socket.end());
    });
    await carbonWriter({ carbon: { host: '127.0.0.1', port } }).write(batch);
    expect(received).toBe(plaintextLines(batch, new GraphiteLayout(undefined)).join(''));
  });

  it('rejects when nothing listens', async () => {
    const port = await listen(() => undefined);
    await new Promise<void>((resolve) => {
      server?.close(() => {
        resolve();
      });
    });
    await expect(carbonWriter({ carbon: { host: '127.0.0.1', port } }).write(batch)).rejects.toThrow(
      UsageStoreUnavailableError,
    );
  });

  it('rejects when the receiver never finishes reading within the timeout', async () => {
    const port = await listen(() => undefined); // takes the connection, never closes it
    const started = Date.now();
    await expect(carbonWriter({ carbon: { host: '127.0.0.1', port }, timeoutMs: 200 }).write(batch)).rejects.toThrow(
      /did not take the batch within 200 ms/,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
  });

  it('connects to nothing for a batch with nothing to write', async () => {
    let connections = 0;
    const port = await listen((socket) => {
      connections++;
      socket.end();
    });
    await carbonWriter({ carbon: { host: '127.0.0.1', port } }).write({ ...batch, seconds: [], minutes: [] });
    expect(connections).toBe(0);
  });
});

describe('graphiteReader, against a stand-in HTTP server', () => {
  let server: HttpServer | undefined;
  afterEach(() => {
    server?.closeAllConnections();
    server?.close();
    server = undefined;
  });

  async function web(handler: Parameters<typeof createHttpServer>[1]): Promise<URL> {
    const listening = createHttpServer(handler);
    server = listening;
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    return new URL(`http://127.0.0.1:${(listening.address() as AddressInfo).port}/graphite`);
  }

  /** A graphite-web answering every request with no series, and the URLs it was asked. */
  async function emptyWeb(): Promise<{ url: URL; asked: string[] }> {
    const asked: string[] = [];
    const url = await web((request, response) => {
      asked.push(request.url ?? '');
      response.end('[]');
    });
    return { url, asked };
  }

  const query = { event: 'login', from: T, until: T + 60, step: 60, resolution: 1 };

  it('asks under the path graphite-web is served at, with the range whisper needs', async () => {
    const { url, asked } = await emptyWeb();
    const reader = graphiteReader({ web: url, archives: ARCHIVES });
    await reader.series(query);
    // A client's curve: no shadow_denied or settles, which are counted per event only.
    await reader.series({ ...query, feature: 'alice' });
    await reader.close();
    const clientTargets = new URL(asked[1] ?? '', 'http://x').searchParams.getAll('target');
    expect(clientTargets).toHaveLength(6);
    expect(clientTargets.join()).not.toMatch(/shadow_denied|settled/);
    const params = new URL(asked[0] ?? '', 'http://x').searchParams;
    expect(new URL(asked[0] ?? '', 'http://x').pathname).toBe('/graphite/render');
    expect([params.get('from'), params.get('until'), params.get('xFilesFactor')]).toEqual([
      String(T - 1),
      String(T + 59),
      '0',
    ]);
    // One per outcome: allowed, denied, degraded and shadow_denied; and the settles.
    expect(params.getAll('target').map((target) => /"(\w+)"\)$/.exec(target)?.[1])).toEqual([
      'allowed',
      'denied',
      'degraded',
      'shadow_denied',
      'settled',
      'settled_cost',
    ]);
  });

  it.each([
    ['an error status', 500, 'Graphite encountered an unexpected error', /answered 500 to \/render: Graphite/],
    ['something other than JSON', 200, '<html>', /something other than JSON/],
    ['JSON that is no series', 200, '{"a":1}', /not a list of series/],
  ])('rejects with UsageStoreUnavailableError on %s', async (_name, status, body, message) => {
    const url = await web((_request, response) => {
      response.statusCode = status;
      response.end(body);
    });
    const reader = graphiteReader({ web: url, archives: ARCHIVES });
    const read = reader.series(query);
    await expect(read).rejects.toThrow(UsageStoreUnavailableError);
    await expect(read).rejects.toThrow(message);
    await reader.close();
  });

  it('closes without a read, and refuses reads once closed, as after one', async () => {
    const { url, asked } = await emptyWeb();
    // Closed before its client was ever loaded: nothing to close, and nothing opened after.
    const unread = graphiteReader({ web: url, archives: ARCHIVES });
    await unread.close();
    await expect(unread.series(query)).rejects.toThrow(UsageStoreUnavailableError);
    const read = graphiteReader({ web: url, archives: ARCHIVES });
    await read.series(query);
    await read.close();
    await expect(read.series(query)).rejects.toThrow(/closed/);
    expect(asked).toHaveLength(1);
  });

  it('rejects with UsageStoreUnavailableError when graphite-web does not answer within the timeout', async () => {
    const url = await web(() => undefined); // never answers
    const reader = graphiteReader({ web: url, archives: ARCHIVES, timeoutMs: 200 });
    await expect(reader.top({ event: 'login', from: T, until: T + 60, resolution: 60, limit: 5 })).rejects.toThrow(
      UsageStoreUnavailableError,
    );
    await reader.close();
  });

  it('reports the event nodes of /metrics/find over the whole retention, leaves and foreign nodes left out', async () => {
    const url = await web((_request, response) => {
      response.end(
        JSON.stringify([
          { text: 'url_2eshorten', leaf: 0 },
          { text: 'login', leaf: 0 },
          { text: 'allowed', leaf: 1 },
          { text: 'Not.Ours', leaf: 0 },
        ]),
      );
    });
    const reader = graphiteReader({ web: url, archives: ARCHIVES, nowSeconds: () => T + 0.5 });
    const twoYears = 2 * 31_536_000;
    expect(await reader.events()).toEqual([
      { event: 'login', from: T - twoYears, until: T + 1 },
      { event: 'url.shorten', from: T - twoYears, until: T + 1 },
    ]);
    await reader.close();
  });
});
