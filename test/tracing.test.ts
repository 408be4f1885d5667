// OpenTelemetry spans of memgate's decisions, on a real Memcached, sent by memgate's own SDK to
// an OTLP collector of the test's (HTTP with JSON or protobuf, and gRPC): /check, /gate and
// ShouldRateLimit each a server span with its decision, its store calls as its children, a
// caller's traceparent as its parent. Tracing off, memgate loads none of the SDK and starts no
// span; a tracer provider the process registered itself is used in place of memgate's.
// The first test must run first: it looks at what the process has loaded before this file's
// other tests start the SDK. Earlier files in the same worker (the integration project shares
// a worker's modules between files) load none of it: this is the only file that starts it here.
import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import {
  context,
  propagation,
  ProxyTracer,
  trace,
  type Span,
  type SpanOptions,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { VERSION } from '../src/config/version.js';
import { providerRegistered } from '../src/tracing/tracing.js';
import { envoyConfigFile, startEnvoyService, type EnvoyService } from './helpers/envoy-service.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';

const POLICIES = `
events:
  api:
    limits:
      - { name: api-per-minute, limit: 2, window: 1m }
gateway:
  feature: header:x-client
  uri: header:x-original-uri
  routes:
    - { prefix: /api/, event: api }
`;

const ENVOY = `
domain: edge
descriptors:
  - key: user
    rate_limit: { name: per-user, unit: minute, requests_per_unit: 5 }
`;

const memcached = useMemcached();
let policies: string;
let envoyConfig: string;

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'memgate-tracing-'));
  policies = join(dir, 'policies.yaml');
  await writeFile(policies, POLICIES);
  envoyConfig = await envoyConfigFile(ENVOY);
});

const running = new Set<EnvoyService>();
afterEach(async () => {
  await Promise.all([...running].map(stopMemgate));
});

async function startMemgate(env: Record<string, string> = {}, servers = memcached().servers): Promise<EnvoyService> {
  const one = await startEnvoyService(
    { servers, source: 'test', stop: () => Promise.resolve() },
    { config: envoyConfig, env: { MEMGATE_CONFIG: policies, ...env } },
  );
  running.add(one);
  return one;
}

/** Stops a memgate: its SDK sends the spans it still holds. */
async function stopMemgate(one: EnvoyService): Promise<void> {
  running.delete(one);
  one.client.close();
  await one.service.close();
}

/** What the start-up line says of tracing. */
function tracingOf(memgate: EnvoyService): unknown {
  return memgate.lines.map((line) => JSON.parse(line) as { tracing?: string }).find((line) => 'tracing' in line)
    ?.tracing;
}

/** A span as an OTLP collector receives it, its attributes as plain values. */
interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  readonly kind: number;
  readonly attributes: Record<string, unknown>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  readonly status: number;
  readonly resource: Record<string, unknown>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}
type OtlpAttributes = { key: string; value: OtlpValue }[] | undefined;

function plain(value: OtlpValue): unknown {
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(plain);
  if (value.intValue !== undefined) return Number(value.intValue);
  return value.stringValue ?? value.doubleValue ?? value.boolValue;
}
const attributesOf = (list: OtlpAttributes) =>
  Object.fromEntries((list ?? []).map(({ key, value }) => [key, plain(value)]));

interface OtlpJson {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttributes };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: OtlpAttributes;
        status?: { code?: number };
      }[];
    }[];
  }[];
}

/** An OTLP/HTTP collector on a free port: JSON requests read into spans, every request's body kept. */
async function otlpHttpCollector() {
  const spans: ReceivedSpan[] = [];
  const requests: { path: string; contentType: string; body: Buffer }[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const contentType = request.headers['content-type'] ?? '';
      requests.push({ path: request.url ?? '', contentType, body });
      if (contentType.startsWith('application/json')) {
        for (const { resource, scopeSpans } of (JSON.parse(body.toString()) as OtlpJson).resourceSpans ?? [])
          for (const scope of scopeSpans ?? [])
            for (const span of scope.spans ?? [])
              spans.push({
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId ?? '',
                name: span.name,
                kind: span.kind,
                attributes: attributesOf(span.attributes),
                status: span.status?.code ?? 0,
                resource: attributesOf(resource?.attributes),
              });
      }
      response
        .writeHead(200, { 'content-type': contentType || 'application/json' })
        .end(contentType.startsWith('application/json') ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      }),
  };
}

/** An OTLP/gRPC collector: TraceService/Export's requests kept as bytes, each answered with an empty response. */
async function otlpGrpcCollector() {
  const requests: Buffer[] = [];
  const server = new grpc.Server();
  const bytes = (buffer: Buffer) => buffer;
  server.addService(
    {
      Export: {
        path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
        requestStream: false,
        responseStream: false,
        requestSerialize: bytes,
        requestDeserialize: bytes,
        responseSerialize: () => Buffer.alloc(0),
        responseDeserialize: bytes,
      },
    },
    {
      Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
        requests.push(call.request);
        callback(null, Buffer.alloc(0));
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => {
      if (error) reject(error);
      else resolve(bound);
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => {
      server.forceShutdown();
    },
  };
}

/** The OpenTelemetry packages loaded in this process beside the API (which prom-client and vitest may load too). */
function sdkModulesLoaded(): string[] {
  return Object.keys(createRequire(import.meta.url).cache).filter((path) =>
    /[\\/]node_modules[\\/]@opentelemetry[\\/](?!api[\\/])/.test(path),
  );
}

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const CALLER_SPAN = 'b7ad6b7169203331';
const TRACEPARENT = `00-${TRACE_ID}-${CALLER_SPAN}-01`;

async function check(url: string, feature: string, headers: Record<string, string> = {}): Promise<number> {
  return (await fetch(`${url}/check?event=api&feature=${feature}`, { headers })).status;
}

/** A gateway's question about `client` on a path the policy's routes count. */
async function gate(url: string, client: string): Promise<number> {
  return (await fetch(`${url}/gate`, { headers: { 'x-client': client, 'x-original-uri': '/api/x' } })).status;
}

/** Envoy's question about `user`: its overall code. */
async function askEnvoy(memgate: EnvoyService, user: string): Promise<string> {
  const answer = await memgate.client.shouldRateLimit({
    domain: 'edge',
    descriptors: [{ entries: [{ key: 'user', value: user }] }],
  });
  return answer.overall_code;
}

describe('tracing off', () => {
  it('loads no part of the SDK and starts no span on any surface', async () => {
    expect(providerRegistered()).toBe(false);
    const memgate = await startMemgate();
    expect(tracingOf(memgate)).toBe('off');
    // A provider registered after the start counts any span memgate would start through the API.
    let spans = 0;
    // The API's no-op tracer: a ProxyTracer with nothing to delegate to.
    const noop = new ProxyTracer({ getDelegateTracer: () => undefined }, 'noop');
    const startActive = noop.startActiveSpan.bind(noop) as (...args: unknown[]) => unknown;
    const counting: TracerProvider = {
      getTracer: (): Tracer => ({
        startSpan: (name: string, options?: SpanOptions) => {
          spans++;
          return noop.startSpan(name, options);
        },
        startActiveSpan: (...args: unknown[]) => {
          spans++;
          return startActive(...args);
        },
      }),
    };
    trace.setGlobalTracerProvider(counting);
    try {
      const feature = `f-${uniquePrefix()}`;
      expect(await check(memgate.url, feature, { traceparent: TRACEPARENT })).toBe(200);
      expect(await gate(memgate.url, feature)).toBe(200);
      expect(await askEnvoy(memgate, feature)).toBe('OK');
      expect(spans).toBe(0);
      expect(sdkModulesLoaded()).toEqual([]);
    } finally {
      trace.disable();
    }
  });
});

describe("memgate's SDK", () => {
  let collector: Awaited<ReturnType<typeof otlpHttpCollector>>;
  beforeAll(async () => {
    collector = await otlpHttpCollector();
  });
  afterAll(() => collector.close());

  it('sends a server span per /check, /gate and ShouldRateLimit, its store calls as children, parented by traceparent', async () => {
    collector.spans.length = 0;
    const memgate = await startMemgate({
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    expect(tracingOf(memgate)).toBe(`OTLP http/json to ${collector.url}/v1/traces`);
    expect(providerRegistered()).toBe(true);
    const feature = `f-${uniquePrefix()}`;
    expect(await check(memgate.url, feature, { traceparent: TRACEPARENT })).toBe(200);
    expect(await check(memgate.url, feature)).toBe(200);
    expect(await check(memgate.url, feature)).toBe(429);
    // Refused: the caller's mistake, not memgate's.
    expect((await fetch(`${memgate.url}/check?event=api`)).status).toBe(400);
    expect(await gate(memgate.url, `g-${uniquePrefix()}`)).toBe(200);
    expect(await askEnvoy(memgate, feature)).toBe('OK');
    await stopMemgate(memgate);
    expect(providerRegistered()).toBe(false);

    expect(collector.requests.every(({ path }) => path === '/v1/traces')).toBe(true);
    const { spans } = collector;
    const children = (parent: ReceivedSpan) => spans.filter((span) => span.parentSpanId === parent.spanId);
    const checks = spans.filter((span) => span.name === 'GET /check');
    expect(checks).toHaveLength(4);
    const [first, second, denied, refused] = checks as [ReceivedSpan, ReceivedSpan, ReceivedSpan, ReceivedSpan];
    expect(first).toMatchObject({ traceId: TRACE_ID, parentSpanId: CALLER_SPAN, kind: 2, status: 0 });
    expect(first.attributes).toMatchObject({
      'http.request.method': 'GET',
      'http.route': '/check',
      'http.response.status_code': 200,
      'memgate.decision': 'allowed',
      'memgate.event': 'api',
      'memgate.limits': ['api-per-minute'],
      'memgate.degraded': false,
      'memgate.policy_version': expect.stringMatching(/^[0-9a-f]{12}$/) as string,
    });
    expect(first.resource).toMatchObject({ 'service.name': 'memgate', 'service.version': VERSION });
    const stored = children(first);
    expect(stored.length).toBeGreaterThan(0);
    for (const call of stored) {
      expect(call).toMatchObject({ traceId: TRACE_ID, kind: 3, name: expect.stringMatching(/^memcached /) as string });
      expect(call.attributes).toMatchObject({ 'db.system.name': 'memcached' });
    }
    expect(stored.map((call) => call.name)).toContain('memcached incrementAndRead');
    // Without a traceparent, a trace of its own.
    expect(second.parentSpanId).toBe('');
    expect(second.traceId).not.toBe(TRACE_ID);
    expect(denied.attributes).toMatchObject({ 'memgate.decision': 'denied', 'http.response.status_code': 429 });
    expect(denied.status).toBe(0);
    expect(refused.attributes).toMatchObject({ 'http.response.status_code': 400 });
    expect(refused.status).toBe(0);

    const gateSpan = spans.find((span) => span.name === 'GET /gate');
    expect(gateSpan?.attributes).toMatchObject({
      'http.route': '/gate',
      'http.response.status_code': 200,
      'memgate.decision': 'allowed',
      'memgate.event': 'api',
      'memgate.limits': ['api-per-minute'],
      'memgate.degraded': false,
    });
    expect(children(gateSpan as ReceivedSpan).map((call) => call.name)).toContain('memcached incrementAndRead');

    const envoy = spans.find((span) => span.name === 'envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit');
    expect(envoy).toMatchObject({ kind: 2, status: 0, parentSpanId: '' });
    expect(envoy?.attributes).toMatchObject({
      'rpc.system': 'grpc',
      'rpc.method': 'ShouldRateLimit',
      'rpc.grpc.status_code': 0,
      'memgate.envoy.domain': 'edge',
      'memgate.envoy.descriptors': 1,
      'memgate.decision': 'allowed',
      'memgate.limits': ['per-user'],
      'memgate.degraded': false,
      'memgate.policy_version': expect.stringMatching(/^[0-9a-f]{12}$/) as string,
    });
    expect(children(envoy as ReceivedSpan).map((call) => call.name)).toContain('memcached incrementAndRead');
    // What the first test found missing is loaded now: that test would have seen it.
    expect(sdkModulesLoaded().some((path) => path.includes('sdk-trace-node'))).toBe(true);
  });

  it('marks a decision made without the store degraded, and the failed store call an error', async () => {
    collector.spans.length = 0;
    // A Memcached that does not answer: the event's onStoreError (allow by default) decides.
    const silent = createServer();
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    silent.on('connection', () => undefined);
    const { port } = silent.address() as { port: number };
    try {
      const memgate = await startMemgate(
        {
          MEMCACHED_TIMEOUT_MS: '50',
          OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        },
        `127.0.0.1:${port}`,
      );
      expect(await check(memgate.url, `f-${uniquePrefix()}`)).toBe(200);
      await stopMemgate(memgate);
    } finally {
      silent.close();
    }
    const span = collector.spans.find((one) => one.name === 'GET /check');
    expect(span?.attributes).toMatchObject({ 'memgate.decision': 'allowed', 'memgate.degraded': true });
    expect(span?.status).toBe(0);
    const store = collector.spans.filter((one) => one.parentSpanId === span?.spanId);
    expect(store.length).toBeGreaterThan(0);
    expect(store.every((call) => call.status === 2)).toBe(true);
  });

  it("parents a ShouldRateLimit call's span on the traceparent of its metadata", async () => {
    collector.spans.length = 0;
    const memgate = await startMemgate({
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    const answer = await memgate.client.shouldRateLimit(
      { domain: 'edge', descriptors: [{ entries: [{ key: 'user', value: `u-${uniquePrefix()}` }] }] },
      { traceparent: TRACEPARENT },
    );
    expect(answer.overall_code).toBe('OK');
    await stopMemgate(memgate);
    const span = collector.spans.find((one) => one.name.endsWith('/ShouldRateLimit'));
    expect(span).toMatchObject({ traceId: TRACE_ID, parentSpanId: CALLER_SPAN, kind: 2 });
    expect(collector.spans.filter((one) => one.parentSpanId === span?.spanId).length).toBeGreaterThan(0);
  });

  it("sends protobuf over HTTP by default, and gRPC as upstream's TRACING_EXPORTER_PROTOCOL asks", async () => {
    collector.requests.length = 0;
    const proto = await startMemgate({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
    expect(await check(proto.url, `f-${uniquePrefix()}`)).toBe(200);
    await stopMemgate(proto);
    expect(collector.requests.length).toBeGreaterThan(0);
    for (const { path, contentType, body } of collector.requests) {
      expect([path, contentType]).toEqual(['/v1/traces', 'application/x-protobuf']);
      // Protobuf keeps strings as their bytes.
      expect(body.includes('GET /check')).toBe(true);
    }

    const grpcCollector = await otlpGrpcCollector();
    try {
      const upstream = await startMemgate({
        TRACING_ENABLED: 'true',
        TRACING_EXPORTER_PROTOCOL: 'grpc',
        TRACING_SERVICE_NAME: 'edge-ratelimit',
        TRACING_SAMPLING_RATE: '1',
        OTEL_EXPORTER_OTLP_ENDPOINT: grpcCollector.url,
      });
      expect(await check(upstream.url, `f-${uniquePrefix()}`)).toBe(200);
      await stopMemgate(upstream);
      expect(grpcCollector.requests.length).toBeGreaterThan(0);
      const sent = Buffer.concat(grpcCollector.requests);
      expect(sent.includes('GET /check')).toBe(true);
      expect(sent.includes('edge-ratelimit')).toBe(true);
    } finally {
      grpcCollector.close();
    }
  });
});

describe("the process's own tracer provider", () => {
  it('is used in place of an SDK of memgate, and left registered when memgate stops', async () => {
    const { NodeTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } =
      await import('@opentelemetry/sdk-trace-node');
    const exporter = new InMemorySpanExporter();
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    provider.register();
    const collector = await otlpHttpCollector();
    try {
      // memgate's own settings would start its SDK; the process's provider wins.
      const memgate = await startMemgate({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
      expect(tracingOf(memgate)).toBe("the process's own tracer provider");
      const parent: Span = provider.getTracer('app').startSpan('app request');
      const feature = `f-${uniquePrefix()}`;
      const headers: Record<string, string> = {};
      propagation.inject(trace.setSpan(context.active(), parent), headers);
      expect(await check(memgate.url, feature, headers)).toBe(200);
      parent.end();
      await stopMemgate(memgate);
      expect(collector.requests).toEqual([]);
      expect(providerRegistered()).toBe(true);
      const spans = exporter.getFinishedSpans();
      const checkSpan = spans.find((span) => span.name === 'GET /check');
      expect(checkSpan?.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
      expect(checkSpan?.attributes['memgate.decision']).toBe('allowed');
      expect(spans.some((span) => span.parentSpanContext?.spanId === checkSpan?.spanContext().spanId)).toBe(true);
    } finally {
      await collector.close();
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    }
  });
});
