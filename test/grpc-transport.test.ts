// The gRPC transport of Envoy's rate limit service (src/grpc/), over a real socket with a real
// grpc-js client sending what Envoy's ratelimit filter sends. This tests the transport and the
// wire format, not the limiting: each test hands the server a `decide` of its own that records
// the request it was given and echoes it back into the response, so every field is seen crossing
// the wire both ways. Deciding from descriptors comes with the service's wiring.
import http2 from 'node:http2';
import { createConnection } from 'node:net';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterEach, describe, expect, it } from 'vitest';
import type { RateLimitRequest, RateLimitResponse } from '../src/grpc/messages.js';
import { REQUEST_LIMITS } from '../src/grpc/messages.js';
import { startGrpcServer, type GrpcServer, type GrpcServerOptions } from '../src/grpc/server.js';
import { HealthClient, RateLimitClient } from '../scripts/lib/rls-client.js';

interface Logged {
  details: object;
  message: string;
}

/** A started server, its client and what it logged; closed after each test. */
interface Harness {
  server: GrpcServer;
  client: grpc.Client;
  health: grpc.Client;
  logged: Logged[];
  decided: RateLimitRequest[];
}

const open: Harness[] = [];
afterEach(async () => {
  for (const harness of open.splice(0)) {
    harness.client.close();
    harness.health.close();
    await harness.server.close({ deadlineMs: 1000 });
  }
});

type Decide = (request: RateLimitRequest) => Promise<RateLimitResponse>;

async function start(decide: Decide, options: Partial<GrpcServerOptions> = {}): Promise<Harness> {
  const logged: Logged[] = [];
  const decided: RateLimitRequest[] = [];
  const server = await startGrpcServer({
    port: 0,
    host: '127.0.0.1',
    decide: (request) => {
      decided.push(request);
      return decide(request);
    },
    log: { error: (details, message) => logged.push({ details, message }) },
    ...options,
  });
  const address = `127.0.0.1:${server.port}`;
  const harness = {
    server,
    client: new RateLimitClient(address, grpc.credentials.createInsecure()),
    health: new HealthClient(address, grpc.credentials.createInsecure()),
    logged,
    decided,
  };
  open.push(harness);
  return harness;
}

type Reply = Record<string, unknown>;
type UnaryMethod = (request: object, options: grpc.CallOptions, callback: grpc.requestCallback<Reply>) => void;

/** One unary call; resolves to the reply or rejects with the grpc-js ServiceError. */
function call(client: grpc.Client, method: string, request: object): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const unary = (client as unknown as Record<string, UnaryMethod>)[method] as UnaryMethod;
    unary.call(client, request, { deadline: Date.now() + 5000 }, (error, reply) => {
      if (error) reject(error);
      else resolve(reply as Reply);
    });
  });
}

async function callError(client: grpc.Client, method: string, request: object): Promise<grpc.ServiceError> {
  const error = await call(client, method, request).then(
    (reply) => {
      throw new Error(`expected an error, got ${JSON.stringify(reply)}`);
    },
    (failure: unknown) => failure as grpc.ServiceError,
  );
  return error;
}

/** Echoes the request into the response: one status per descriptor, each field derived from what came in. */
const echo: Decide = (request) =>
  Promise.resolve({
    overallCode: request.descriptors.some((descriptor) => descriptor.entries[0]?.value === 'over')
      ? 'OVER_LIMIT'
      : 'OK',
    statuses: request.descriptors.map((descriptor, index) => ({
      code: descriptor.entries[0]?.value === 'over' ? 'OVER_LIMIT' : 'OK',
      currentLimit: {
        name: `${request.domain}:${descriptor.entries.map((entry) => `${entry.key}=${entry.value}`).join(',')}`,
        requestsPerUnit: descriptor.limit?.requestsPerUnit ?? 100 + index,
        unit: descriptor.limit?.unit ?? 'WEEK',
      },
      limitRemaining: descriptor.hitsAddend ?? request.hitsAddend,
      durationUntilResetSeconds: 2 + index,
    })),
    responseHeadersToAdd: [
      { key: 'ratelimit-policy', value: `${request.descriptors.length};w=60` },
      { key: 'x-domain', value: request.domain },
    ],
    requestHeadersToAdd: [{ key: 'x-hits', value: String(request.hitsAddend) }],
  } satisfies RateLimitResponse);

/** A request as Envoy's HTTP ratelimit filter sends it: remote_address, then generic_key + path. */
const envoyRequest = {
  domain: 'edge',
  descriptors: [
    { entries: [{ key: 'remote_address', value: '10.0.0.1' }] },
    {
      entries: [
        { key: 'generic_key', value: 'over' },
        { key: 'path', value: '/api/orders' },
      ],
    },
  ],
  hits_addend: 0,
};

describe('ShouldRateLimit round trips', () => {
  it('hands decide the request as Envoy sent it and returns every field of its answer', async () => {
    const harness = await start(echo);
    const reply = await call(harness.client, 'ShouldRateLimit', envoyRequest);

    expect(harness.decided).toEqual([
      {
        domain: 'edge',
        descriptors: [
          { entries: [{ key: 'remote_address', value: '10.0.0.1' }] },
          {
            entries: [
              { key: 'generic_key', value: 'over' },
              { key: 'path', value: '/api/orders' },
            ],
          },
        ],
        hitsAddend: 0,
      },
    ]);
    expect(reply.overall_code).toBe('OVER_LIMIT');
    expect(reply.statuses).toEqual([
      {
        code: 'OK',
        current_limit: { name: 'edge:remote_address=10.0.0.1', requests_per_unit: 100, unit: 'WEEK' },
        limit_remaining: 0,
        duration_until_reset: { seconds: 2, nanos: 0 },
      },
      {
        code: 'OVER_LIMIT',
        current_limit: { name: 'edge:generic_key=over,path=/api/orders', requests_per_unit: 101, unit: 'WEEK' },
        limit_remaining: 0,
        duration_until_reset: { seconds: 3, nanos: 0 },
      },
    ]);
    expect(reply.response_headers_to_add).toEqual([
      { key: 'ratelimit-policy', value: '2;w=60', raw_value: Buffer.alloc(0) },
      { key: 'x-domain', value: 'edge', raw_value: Buffer.alloc(0) },
    ]);
    expect(reply.request_headers_to_add).toEqual([{ key: 'x-hits', value: '0', raw_value: Buffer.alloc(0) }]);
  });

  it('carries hits_addend N, a descriptor hits_addend (0 included) and a limit override', async () => {
    const harness = await start(echo);
    const reply = await call(harness.client, 'ShouldRateLimit', {
      domain: 'edge',
      descriptors: [
        { entries: [{ key: 'user', value: 'ann' }] },
        { entries: [{ key: 'user', value: 'bob' }], hits_addend: { value: 7 } },
        { entries: [{ key: 'user', value: 'cy' }], hits_addend: { value: 0 } },
        { entries: [{ key: 'plan', value: '' }], limit: { requests_per_unit: 42, unit: 'HOUR' } },
      ],
      hits_addend: 5,
    });

    expect(harness.decided[0]?.descriptors).toEqual([
      { entries: [{ key: 'user', value: 'ann' }] },
      { entries: [{ key: 'user', value: 'bob' }], hitsAddend: 7 },
      { entries: [{ key: 'user', value: 'cy' }], hitsAddend: 0 },
      { entries: [{ key: 'plan', value: '' }], limit: { requestsPerUnit: 42, unit: 'HOUR' } },
    ]);
    expect(harness.decided[0]?.hitsAddend).toBe(5);
    const statuses = reply.statuses as Reply[];
    expect(statuses.map((status) => status.limit_remaining)).toEqual([5, 7, 0, 5]);
    expect(statuses[3]?.current_limit).toEqual({ name: 'edge:plan=', requests_per_unit: 42, unit: 'HOUR' });
    expect(reply.overall_code).toBe('OK');
  });

  it('reads the bytes Envoy puts on the wire, field numbers and all', async () => {
    const harness = await start(echo);
    // RateLimitRequest{domain: "edge" (1), descriptors (2): [{entries (1): [{key (1): "k", value (2): "v"}]}],
    // hits_addend (3): 3}, encoded by hand from Envoy's field numbers rather than by our .proto.
    const entry = Buffer.from([0x0a, 0x01, 0x6b, 0x12, 0x01, 0x76]);
    const descriptor = Buffer.concat([Buffer.from([0x0a, entry.length]), entry]);
    const bytes = Buffer.concat([
      Buffer.from([0x0a, 0x04]),
      Buffer.from('edge'),
      Buffer.from([0x12, descriptor.length]),
      descriptor,
      Buffer.from([0x18, 0x03]),
    ]);
    const raw = await new Promise<Buffer>((resolve, reject) => {
      harness.client.makeUnaryRequest(
        '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
        (message: Buffer) => message,
        (message: Buffer) => message,
        bytes,
        (error, reply) => {
          if (error) reject(error);
          else resolve(reply as Buffer);
        },
      );
    });

    expect(harness.decided).toEqual([
      { domain: 'edge', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }], hitsAddend: 3 },
    ]);
    // overall_code (field 1, varint) OK = 1 comes first, then the status (field 2, length-delimited).
    expect([...raw.subarray(0, 3)]).toEqual([0x08, 0x01, 0x12]);
  });
});

describe('ShouldRateLimit refuses what Envoy would not send', () => {
  const cases: [string, object, RegExp][] = [
    ['an empty domain', { ...envoyRequest, domain: '' }, /^domain must not be empty$/],
    ['no descriptors', { ...envoyRequest, descriptors: [] }, /^descriptors must not be empty/],
    [
      'a descriptor without entries',
      { ...envoyRequest, descriptors: [{ entries: [] }] },
      /descriptors\[0\] has no entries/,
    ],
    [
      'an empty key',
      { ...envoyRequest, descriptors: [{ entries: [{ key: '', value: 'x' }] }] },
      /^descriptors\[0\]\.entries\[0\]\.key must not be empty$/,
    ],
    [
      'a value past the limit',
      { ...envoyRequest, descriptors: [{ entries: [{ key: 'k', value: 'é'.repeat(REQUEST_LIMITS.valueBytes) }] }] },
      new RegExp(
        `^descriptors\\[0\\]\\.entries\\[0\\]\\.value is ${2 * REQUEST_LIMITS.valueBytes} bytes; at most ${REQUEST_LIMITS.valueBytes}`,
      ),
    ],
    [
      'too many descriptors',
      {
        ...envoyRequest,
        descriptors: Array.from({ length: REQUEST_LIMITS.descriptors + 1 }, () => envoyRequest.descriptors[0]),
      },
      new RegExp(`^${REQUEST_LIMITS.descriptors + 1} descriptors; at most ${REQUEST_LIMITS.descriptors}`),
    ],
    [
      'an override without a unit',
      { ...envoyRequest, descriptors: [{ entries: [{ key: 'k', value: 'v' }], limit: { requests_per_unit: 5 } }] },
      /^descriptors\[0\]\.limit\.unit must be one of SECOND, MINUTE/,
    ],
  ];

  it.each(cases)('%s: INVALID_ARGUMENT with its reason, and nothing decided', async (_name, request, reason) => {
    const harness = await start(echo);
    const error = await callError(harness.client, 'ShouldRateLimit', request);
    expect(error.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error.details).toMatch(reason);
    expect(harness.decided).toEqual([]);
    // The server is still there for the next request.
    expect((await call(harness.client, 'ShouldRateLimit', envoyRequest)).overall_code).toBe('OVER_LIMIT');
  });

  it('a message past the size limit: RESOURCE_EXHAUSTED before decoding', async () => {
    const harness = await start(echo, { maxMessageBytes: 4096 });
    const request = { ...envoyRequest, descriptors: [{ entries: [{ key: 'k', value: 'x'.repeat(5000) }] }] };
    const error = await callError(harness.client, 'ShouldRateLimit', request);
    expect(error.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(harness.decided).toEqual([]);
  });
});

describe('ShouldRateLimit when deciding fails', () => {
  it('a decide that rejects: INTERNAL without its message, which goes to the log', async () => {
    const harness = await start(() => Promise.reject(new Error('memcached at 10.1.2.3:11211 said secret-token')));
    const error = await callError(harness.client, 'ShouldRateLimit', envoyRequest);
    expect(error.code).toBe(grpc.status.INTERNAL);
    expect(error.details).toBe('memgate could not answer ShouldRateLimit; its log says why');
    expect(harness.logged).toHaveLength(1);
    expect((harness.logged[0]?.details as { err: Error }).err.message).toContain('secret-token');
  });

  it('a decide that throws synchronously, or answers a status short: INTERNAL, logged', async () => {
    const throwing = await start(() => {
      throw new TypeError('boom');
    });
    expect((await callError(throwing.client, 'ShouldRateLimit', envoyRequest)).code).toBe(grpc.status.INTERNAL);
    expect(throwing.logged.map((entry) => (entry.details as { err: Error }).err.message)).toEqual(['boom']);

    const short = await start((request) =>
      echo(request).then((response) => ({ ...response, statuses: response.statuses.slice(1) })),
    );
    expect((await callError(short.client, 'ShouldRateLimit', envoyRequest)).code).toBe(grpc.status.INTERNAL);
    expect(short.logged.map((entry) => (entry.details as { err: Error }).err.message)).toEqual([
      '1 statuses for 2 descriptors',
    ]);
  });
});

describe('the gRPC health service', () => {
  it('answers SERVING or NOT_SERVING from the callback, NOT_FOUND for an unknown service', async () => {
    let serving = true;
    const harness = await start(echo, { serving: () => serving });
    expect(await call(harness.health, 'Check', { service: '' })).toEqual({ status: 'SERVING' });
    expect(await call(harness.health, 'Check', { service: 'envoy.service.ratelimit.v3.RateLimitService' })).toEqual({
      status: 'SERVING',
    });
    // The name envoyproxy/ratelimit registers, which its users' Envoy clusters health-check.
    expect(await call(harness.health, 'Check', { service: 'ratelimit' })).toEqual({ status: 'SERVING' });
    serving = false;
    expect(await call(harness.health, 'Check', { service: '' })).toEqual({ status: 'NOT_SERVING' });
    expect(await call(harness.health, 'Check', { service: 'ratelimit' })).toEqual({ status: 'NOT_SERVING' });
    const unknown = await callError(harness.health, 'Check', { service: 'other.Service' });
    expect(unknown.code).toBe(grpc.status.NOT_FOUND);
  });

  it('a callback that throws: NOT_SERVING, logged', async () => {
    const harness = await start(echo, {
      serving: () => {
        throw new Error('no store yet');
      },
    });
    expect(await call(harness.health, 'Check', { service: '' })).toEqual({ status: 'NOT_SERVING' });
    expect(harness.logged).toHaveLength(1);
  });
});

describe('shutdown', () => {
  it('lets a call in flight finish, then refuses new ones', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const harness = await start(async (request) => {
      await held;
      return echo(request);
    });
    const inFlight = call(harness.client, 'ShouldRateLimit', envoyRequest);
    while (harness.decided.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));

    const closed = harness.server.close({ deadlineMs: 5000 });
    const healthDuringClose = call(harness.health, 'Check', { service: '' }).catch((error: unknown) => error);
    release();
    expect((await inFlight).overall_code).toBe('OVER_LIMIT');
    expect(await closed).toEqual({ forced: false });
    // Refused or NOT_SERVING, never SERVING, once closing began.
    expect(await healthDuringClose).not.toEqual({ status: 'SERVING' });

    const after = await callError(harness.client, 'ShouldRateLimit', envoyRequest);
    expect(after.code).toBe(grpc.status.UNAVAILABLE);
  });

  it('cuts a call still in flight at the deadline', async () => {
    const harness = await start(() => new Promise<RateLimitResponse>(() => undefined));
    const inFlight = callError(harness.client, 'ShouldRateLimit', envoyRequest);
    while (harness.decided.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));

    const started = performance.now();
    expect(await harness.server.close({ deadlineMs: 200 })).toEqual({ forced: true });
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    expect((await inFlight).code).not.toBe(grpc.status.OK);
  });
});

/** Raw HTTP/2 against the server: what no well-behaved gRPC client sends, byte for byte. */
describe('the transport under calls grpc-js would not make', () => {
  const PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';
  const encodedRequest = (): Buffer => {
    const definition = protoLoader.loadSync('envoy/service/ratelimit/v3/rls.proto', {
      includeDirs: [fileURLToPath(new URL('../proto/', import.meta.url))],
      keepCase: true,
    }) as Record<string, Record<string, { requestSerialize: (value: object) => Buffer }>>;
    const method = definition['envoy.service.ratelimit.v3.RateLimitService']?.ShouldRateLimit;
    if (!method) throw new Error('ShouldRateLimit is not in the proto');
    return method.requestSerialize(envoyRequest);
  };
  /** `message` behind gRPC's prefix, whose length may say otherwise. */
  const prefixed = (message: Buffer, { compressed = false, length = message.length } = {}) => {
    const head = Buffer.alloc(5);
    head[0] = compressed ? 1 : 0;
    head.writeUInt32BE(length, 1);
    return Buffer.concat([head, message]);
  };

  interface RawAnswer {
    headers: http2.IncomingHttpHeaders;
    trailers: http2.IncomingHttpHeaders;
    body: Buffer;
    /** The stream's close code: NO_ERROR when the server asked the sender to stop. */
    rstCode: number;
  }

  /** One stream on `session`: its request headers and body chunks, sent as given, and what came back. */
  function rawCall(
    session: http2.ClientHttp2Session,
    chunks: Buffer[],
    headers: http2.OutgoingHttpHeaders = {},
  ): Promise<RawAnswer> {
    return new Promise((resolve, reject) => {
      const stream = session.request({
        ':method': 'POST',
        ':path': PATH,
        'content-type': 'application/grpc',
        te: 'trailers',
        ...headers,
      });
      const answer: RawAnswer = { headers: {}, trailers: {}, body: Buffer.alloc(0), rstCode: -1 };
      const body: Buffer[] = [];
      stream.on('response', (received) => {
        answer.headers = received;
      });
      stream.on('trailers', (received: http2.IncomingHttpHeaders) => {
        answer.trailers = received;
      });
      stream.on('data', (chunk: Buffer) => body.push(chunk));
      stream.on('error', () => undefined);
      stream.on('close', () => {
        answer.body = Buffer.concat(body);
        answer.rstCode = stream.rstCode;
        resolve(answer);
      });
      session.once('error', reject);
      const [last, ...rest] = [...chunks].reverse();
      for (const chunk of rest.reverse()) stream.write(chunk);
      stream.end(last);
    });
  }

  const status = (answer: RawAnswer) => answer.trailers['grpc-status'] ?? answer.headers['grpc-status'];

  async function withSession<T>(harness: Harness, use: (session: http2.ClientHttp2Session) => Promise<T>): Promise<T> {
    const session = http2.connect(`http://127.0.0.1:${harness.server.port}`);
    try {
      return await use(session);
    } finally {
      session.close();
    }
  }

  it('answers an oversized message once on its prefix, asks the sender to stop, and keeps the connection', async () => {
    const harness = await start(echo, { maxMessageBytes: 4096 });
    await withSession(harness, async (session) => {
      // 1 MB announced, 64 KB sent: the refusal comes on the prefix, before the rest exists.
      const refused = await rawCall(session, [prefixed(Buffer.alloc(65_536), { length: 1024 * 1024 })]);
      expect(status(refused)).toBe(String(grpc.status.RESOURCE_EXHAUSTED));
      expect(decodeURIComponent(String(refused.headers['grpc-message']))).toBe(
        'the message is 1048576 bytes; at most 4096 are read',
      );
      expect(refused.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
      // The same connection then carries a good call.
      const good = await rawCall(session, [prefixed(encodedRequest())]);
      expect(status(good)).toBe('0');
      expect(session.destroyed).toBe(false);
    });
    expect(harness.decided).toHaveLength(1);
  });

  it('reads a message split over many frames, and a gzip-compressed one', async () => {
    const harness = await start(echo);
    const message = prefixed(encodedRequest());
    const zipped = gzipSync(encodedRequest());
    await withSession(harness, async (session) => {
      const split = await rawCall(
        session,
        Array.from(message, (_byte, i) => message.subarray(i, i + 1)),
      );
      expect(status(split)).toBe('0');
      const compressed = await rawCall(session, [prefixed(zipped, { compressed: true })], { 'grpc-encoding': 'gzip' });
      expect(status(compressed)).toBe('0');
      const unknown = await rawCall(session, [prefixed(zipped, { compressed: true })], { 'grpc-encoding': 'br' });
      expect(status(unknown)).toBe(String(grpc.status.UNIMPLEMENTED));
      expect(unknown.headers['grpc-accept-encoding']).toBe('identity,gzip,deflate');
      // Flagged compressed in no encoding, or with a flag that is neither 0 nor 1: the sender's fault, INTERNAL.
      const unnamed = await rawCall(session, [prefixed(zipped, { compressed: true })]);
      expect(status(unnamed)).toBe(String(grpc.status.INTERNAL));
      const badFlag = prefixed(encodedRequest());
      badFlag[0] = 2;
      expect(status(await rawCall(session, [badFlag]))).toBe(String(grpc.status.INTERNAL));
    });
    expect(harness.decided).toHaveLength(2);
  });

  it('refuses a body that is not one whole message, an unknown method and a call that is not gRPC, deciding nothing', async () => {
    const harness = await start(echo);
    const message = prefixed(encodedRequest());
    await withSession(harness, async (session) => {
      const cut = await rawCall(session, [message.subarray(0, message.length - 1)]);
      expect(status(cut)).toBe(String(grpc.status.INVALID_ARGUMENT));
      expect(decodeURIComponent(String(cut.headers['grpc-message']))).toBe('the request ended before its message did');
      const two = await rawCall(session, [message, message]);
      expect(status(two)).toBe(String(grpc.status.INVALID_ARGUMENT));
      const garbage = await rawCall(session, [prefixed(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]))]);
      expect(status(garbage)).toBe(String(grpc.status.INVALID_ARGUMENT));
      const unknownMethod = await rawCall(session, [message], {
        ':path': '/envoy.service.ratelimit.v3.RateLimitService/Other',
      });
      expect(status(unknownMethod)).toBe(String(grpc.status.UNIMPLEMENTED));
      const notGrpc = await rawCall(session, [Buffer.from('{}')], { 'content-type': 'application/json' });
      expect(notGrpc.headers[':status']).toBe(415);
      const grpcWeb = await rawCall(session, [message], { 'content-type': 'application/grpc-web+proto' });
      expect(grpcWeb.headers[':status']).toBe(415);
      expect(session.destroyed).toBe(false);
    });
    expect(harness.decided).toEqual([]);
  });

  it('pings a silent connection every keepalive period, and closes one that does not answer', async () => {
    const harness = await start(echo, { keepaliveMs: 100, keepaliveTimeoutMs: 100 });
    // A real client answers each ping, and keeps its connection.
    const pings = await withSession(harness, async (session) => {
      let seen = 0;
      session.on('ping', () => {
        seen++;
      });
      await new Promise((resolve) => setTimeout(resolve, 450));
      expect(session.destroyed).toBe(false);
      return seen;
    });
    expect(pings).toBeGreaterThanOrEqual(2);
    // A peer that says HTTP/2's preface and its settings, then nothing: closed once a ping goes unanswered.
    const socket = createConnection({ host: '127.0.0.1', port: harness.server.port });
    const closed = new Promise<number>((resolve) => {
      const since = performance.now();
      socket.on('close', () => {
        resolve(performance.now() - since);
      });
    });
    socket.on('error', () => undefined);
    socket.write(
      Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]),
    );
    socket.resume();
    expect(await closed).toBeLessThan(2000);
  });

  it('survives a peer that resets its call mid-message, at any point, and serves the next', async () => {
    const harness = await start(echo);
    const message = prefixed(encodedRequest());
    await withSession(harness, async (session) => {
      // Cut after 0, 3 (inside the prefix) and 9 bytes (inside the message), each by RST_STREAM(NO_ERROR), as Node's own client does.
      for (const cut of [0, 3, 9]) {
        const stream = session.request({
          ':method': 'POST',
          ':path': PATH,
          'content-type': 'application/grpc',
          te: 'trailers',
        });
        stream.on('error', () => undefined);
        if (cut > 0) stream.write(message.subarray(0, cut));
        await new Promise((resolve) => setTimeout(resolve, 20));
        stream.close(http2.constants.NGHTTP2_NO_ERROR);
        await new Promise((resolve) => stream.once('close', resolve));
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(status(await rawCall(session, [message]))).toBe('0');
    });
    expect(harness.decided).toHaveLength(1);
  });

  it('gives up on a message that stops arriving, and reads a grpc-timeout longer than a timer holds as none', async () => {
    const harness = await start(echo, { readTimeoutMs: 200 });
    const message = prefixed(encodedRequest());
    await withSession(harness, async (session) => {
      const started = performance.now();
      const stalled = await new Promise<RawAnswer>((resolve) => {
        const stream = session.request({ ':method': 'POST', ':path': PATH, 'content-type': 'application/grpc' });
        const answer: RawAnswer = { headers: {}, trailers: {}, body: Buffer.alloc(0), rstCode: -1 };
        stream.on('response', (received) => {
          answer.headers = received;
        });
        stream.on('error', () => undefined);
        stream.on('close', () => {
          answer.rstCode = stream.rstCode;
          resolve(answer);
        });
        stream.write(message.subarray(0, 8));
      });
      expect(status(stalled)).toBe(String(grpc.status.DEADLINE_EXCEEDED));
      expect(performance.now() - started).toBeGreaterThanOrEqual(190);
      // 99,999,999 hours: not a deadline that fires at once.
      expect(status(await rawCall(session, [message], { 'grpc-timeout': '99999999H' }))).toBe('0');
    });
    expect(harness.decided).toHaveLength(1);
  });

  it('decides nothing for a call whose message arrives after its deadline', async () => {
    const harness = await start(echo);
    const message = prefixed(encodedRequest());
    await withSession(harness, async (session) => {
      const late = await new Promise<RawAnswer>((resolve) => {
        const stream = session.request({
          ':method': 'POST',
          ':path': PATH,
          'content-type': 'application/grpc',
          'grpc-timeout': '100m',
        });
        const answer: RawAnswer = { headers: {}, trailers: {}, body: Buffer.alloc(0), rstCode: -1 };
        stream.on('response', (received) => {
          answer.headers = received;
        });
        stream.on('error', () => undefined);
        stream.on('close', () => {
          resolve(answer);
        });
        stream.write(message.subarray(0, 3));
        setTimeout(() => {
          if (!stream.closed) stream.end(message.subarray(3));
        }, 300);
      });
      expect(status(late)).toBe(String(grpc.status.DEADLINE_EXCEEDED));
      await new Promise((resolve) => setTimeout(resolve, 350));
    });
    expect(harness.decided).toEqual([]);
  });

  it("answers DEADLINE_EXCEEDED at the call's grpc-timeout when the decision is late", async () => {
    const harness = await start(() => new Promise<RateLimitResponse>(() => undefined));
    const started = performance.now();
    const late = await withSession(harness, (session) =>
      rawCall(session, [prefixed(encodedRequest())], { 'grpc-timeout': '150m' }),
    );
    expect(status(late)).toBe(String(grpc.status.DEADLINE_EXCEEDED));
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
    // grpc-js's own deadline gets the same answer.
    const viaClient = await new Promise<grpc.ServiceError>((resolve) => {
      (harness.client as unknown as Record<string, UnaryMethod>).ShouldRateLimit?.call(
        harness.client,
        envoyRequest,
        { deadline: Date.now() + 100 },
        (error) => {
          resolve(error as grpc.ServiceError);
        },
      );
    });
    expect(viaClient.code).toBe(grpc.status.DEADLINE_EXCEEDED);
  });
});
