// Envoy's rate limit service (issue 15) attacked from outside: a client whose values end up in
// descriptors, a caller that reaches the gRPC port with hand-made bytes, and an operator whose
// Memcached freezes. Each test is a promise of docs/envoy.md that an attack tried to break.
import * as grpc from '@grpc/grpc-js';
import { beforeEach, describe, expect, it } from 'vitest';
import { RateLimitClient, oneDescriptor, type RlsClient, type WireRequestIn } from '../scripts/lib/rls-client.js';
import { REQUEST_LIMITS } from '../src/grpc/messages.js';
import { envoyConfigFile, useEnvoyServices } from './helpers/envoy-service.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';
import { awayFromWindowEnd } from './helpers/window.js';

const memcached = useMemcached();

const CONFIG = `
domain: edge
descriptors:
  - key: one
    rate_limit: { unit: hour, requests_per_unit: 1 }
  - key: two
    rate_limit: { unit: hour, requests_per_unit: 2 }
  - key: many
    rate_limit: { unit: hour, requests_per_unit: 1000 }
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 1 }
  - key: strict
    rate_limit: { unit: hour, requests_per_unit: 5, onStoreError: deny }
  - key: lenient
    rate_limit: { unit: hour, requests_per_unit: 5, onStoreError: allow }
  - key: pair
    rate_limit: { unit: hour, requests_per_unit: 30 }
  - key: tenant
    descriptors:
      - key: user
        rate_limit: { unit: hour, requests_per_unit: 1 }
`;

const start = useEnvoyServices(memcached, CONFIG);
// Every limit above is an hour unit, a fixed window, and the services read the real clock: each
// test's calls must fall in one hour, or what they counted is gone past its edge.
beforeEach(() => awayFromWindowEnd(3600));
const configFile = envoyConfigFile;

const descriptors = (...list: [string, string][][]): WireRequestIn => ({
  domain: 'edge',
  descriptors: list.map((pairs) => ({ entries: pairs.map(([key, value]) => ({ key, value })) })),
});

/** What a descriptor alone would be told now, counting nothing (its own hits_addend of 0). */
async function remaining(client: RlsClient, key: string, value: string): Promise<number> {
  const answer = await client.shouldRateLimit({
    domain: 'edge',
    descriptors: [{ entries: [{ key, value }], hits_addend: { value: 0 } }],
  });
  return answer.statuses[0]?.limit_remaining ?? -1;
}

describe('the same counter twice in one request', () => {
  it('is one request of both costs: refused when they do not fit together, and the next single one still passes', async () => {
    const { client } = await start();
    const twice = descriptors([['one', 'u1']], [['one', 'u1']]);
    const refused = await client.shouldRateLimit(twice);
    expect(refused.overall_code).toBe('OVER_LIMIT');
    // Nothing was counted, so a request asking once fits the limit of 1.
    const once = await client.shouldRateLimit(oneDescriptor('edge', ['one', 'u1']));
    expect(once.overall_code).toBe('OK');
    expect(await client.shouldRateLimit(oneDescriptor('edge', ['one', 'u1']))).toMatchObject({
      overall_code: 'OVER_LIMIT',
    });
  });

  it('is admitted when both fit, and counts both', async () => {
    const { client } = await start();
    const twice = descriptors([['two', 'u1']], [['two', 'u1']]);
    expect((await client.shouldRateLimit(twice)).overall_code).toBe('OK');
    expect(await remaining(client, 'two', 'u1')).toBe(0);
  });

  it('peeked and counted in one request: the peek is answered on the counts before the request, in either order', async () => {
    const { client } = await start();
    const peekThenCount: WireRequestIn = {
      domain: 'edge',
      descriptors: [
        { entries: [{ key: 'one', value: 'p1' }], hits_addend: { value: 0 } },
        { entries: [{ key: 'one', value: 'p1' }] },
      ],
    };
    const countThenPeek: WireRequestIn = {
      domain: 'edge',
      descriptors: [
        { entries: [{ key: 'one', value: 'p2' }] },
        { entries: [{ key: 'one', value: 'p2' }], hits_addend: { value: 0 } },
      ],
    };
    const first = await client.shouldRateLimit(peekThenCount);
    const second = await client.shouldRateLimit(countThenPeek);
    expect([first.overall_code, second.overall_code]).toEqual(['OK', 'OK']);
    expect([await remaining(client, 'one', 'p1'), await remaining(client, 'one', 'p2')]).toEqual([0, 0]);
  });
});

describe('hits_addend', () => {
  it('a descriptor asking more hits than a uint64 fits in a JavaScript number is over its limit, not a bad request', async () => {
    const { client } = await start();
    for (const value of [2 ** 53, Number.MAX_SAFE_INTEGER + 2, 2 ** 64 - 1]) {
      const answer = await client.shouldRateLimit({
        domain: 'edge',
        descriptors: [{ entries: [{ key: 'many', value: 'h1' }], hits_addend: { value } }],
      });
      expect(answer.overall_code).toBe('OVER_LIMIT');
      // 0 left, as upstream reports an over-limit status; nothing was counted (asked below).
      expect(answer.statuses[0]).toMatchObject({ code: 'OVER_LIMIT', limit_remaining: 0 });
    }
    const uint32Max = await client.shouldRateLimit({
      ...oneDescriptor('edge', ['many', 'h1']),
      hits_addend: 4_294_967_295,
    });
    expect(uint32Max.overall_code).toBe('OVER_LIMIT');
    expect(await remaining(client, 'many', 'h1')).toBe(1000);
  });
});

/** Hand-made protobuf: a tag and a length-delimited field. */
function field(number: number, bytes: Buffer): Buffer {
  return Buffer.concat([Buffer.from([(number << 3) | 2]), varint(bytes.length), bytes]);
}
function varint(value: number): Buffer {
  const out: number[] = [];
  let rest = value;
  while (rest > 127) {
    out.push((rest & 127) | 128);
    rest >>>= 7;
  }
  out.push(rest);
  return Buffer.from(out);
}
/** A RateLimitRequest of one descriptor of one entry, with the value's bytes as given. */
function rawRequest(domain: string, key: string | Buffer, value: Buffer): Buffer {
  const entry = Buffer.concat([field(1, Buffer.from(key)), field(2, value)]);
  return Buffer.concat([field(1, Buffer.from(domain)), field(2, field(1, entry))]);
}

function rawCall(address: string, body: Buffer): Promise<{ error?: grpc.ServiceError; reply?: Buffer }> {
  const client = new RateLimitClient(address, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
      (bytes: Buffer) => bytes,
      (bytes: Buffer) => bytes,
      body,
      (error, reply) => {
        client.close();
        resolve(error ? { error } : { reply: reply as Buffer });
      },
    );
  });
}

describe('bytes on the wire', () => {
  it('refuses a value that is not UTF-8 (proto3 strings must be), rather than count distinct values as one', async () => {
    const { client, address } = await start();
    const latin1 = await rawCall(address, rawRequest('edge', 'user', Buffer.from([0x4a, 0x6f, 0x73, 0xe9])));
    expect(latin1.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(latin1.error?.details).toMatch(/descriptors\[0\]\.entries\[0\]\.value is not valid UTF-8/);
    // Another user whose value differs in that byte is not affected; nothing was counted.
    const other = await rawCall(address, rawRequest('edge', 'user', Buffer.from([0x4a, 0x6f, 0x73, 0xe8])));
    expect(other.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(await remaining(client, 'user', 'Jos\ufffd')).toBe(1);
    // A bad domain or key is refused too, and a bad value is found however the bytes around it look:
    // here an unknown field's tag (0x80 0x01) completes the value's last byte to a valid "À".
    const badDomain = await rawCall(address, Buffer.concat([field(1, Buffer.from([0x65, 0xff]))]));
    expect(badDomain.error?.details).toMatch(/^domain is not valid UTF-8/);
    const badKey = await rawCall(address, rawRequest('edge', Buffer.from([0xe9]), Buffer.from('v')));
    expect(badKey.error?.details).toMatch(/^descriptors\[0\]\.entries\[0\]\.key is not valid UTF-8/);
    const hidden = Buffer.concat([
      rawRequest('edge', 'user', Buffer.from([0x4a, 0xc3])),
      Buffer.from([0x80, 0x01, 0x01]),
    ]);
    expect((await rawCall(address, hidden)).error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    // Valid UTF-8, U+FFFD itself included, is counted as sent.
    const good = await rawCall(address, rawRequest('edge', 'user', Buffer.from('Jos\ufffd')));
    expect(good.error).toBeUndefined();
    expect(await remaining(client, 'user', 'Jos\ufffd')).toBe(0);
  });
});

describe('what held', () => {
  it('two instances, concurrent requests naming one counter once, twice, or with a peek: never past the limit, nothing of a refused one left', async () => {
    const prefix = uniquePrefix();
    const config = await configFile(CONFIG);
    // Denials repeated from memory for 200 ms (1 s by default), so that the counters are read past it sooner.
    const env = { MEMGATE_MAX_DENIAL_CACHE_MS: '200' };
    const [a, b] = await Promise.all([start({ config, prefix, env }), start({ config, prefix, env })]);
    const shapes: WireRequestIn[] = [
      descriptors([['pair', 'k']]),
      descriptors([['pair', 'k']], [['pair', 'k']]),
      {
        domain: 'edge',
        descriptors: [
          { entries: [{ key: 'pair', value: 'k' }], hits_addend: { value: 0 } },
          { entries: [{ key: 'pair', value: 'k' }] },
        ],
      },
      descriptors([['pair', 'k']], [['one', 'k']]),
    ];
    const costs = [1, 2, 1, 1];
    const sent = Array.from({ length: 160 }, (_, i) => i % shapes.length);
    const answers = await Promise.all(
      sent.map((shape, i) => (i % 2 === 0 ? a : b).client.shouldRateLimit(shapes[shape] as WireRequestIn)),
    );
    const admitted = answers.reduce(
      (sum, answer, i) => sum + (answer.overall_code === 'OK' ? (costs[sent[i] as number] ?? 0) : 0),
      0,
    );
    expect(admitted).toBeLessThanOrEqual(30);
    // Refused requests hold room for an instant (increment first, then taken back), which may
    // refuse concurrent ones: that errs towards refusing, by design. Measured: 21 to 30 here.
    expect(admitted).toBeGreaterThan(0);
    // A denial decided on such an instant is remembered for MEMGATE_MAX_DENIAL_CACHE_MS (200 ms here):
    // past it, both instances see exactly what the admitted requests counted.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await remaining(b.client, 'pair', 'k')).toBe(30 - admitted);
    expect(await remaining(a.client, 'pair', 'k')).toBe(30 - admitted);
  });

  it('values that fill a feature past 1024 bytes are counted apart, by hash, and answered', async () => {
    const { client } = await start();
    const long = (c: string) => c.repeat(1024);
    const request = (user: string) => oneDescriptor('edge', ['tenant', long('t')], ['user', user]);
    expect((await client.shouldRateLimit(request(long('u')))).overall_code).toBe('OK');
    expect((await client.shouldRateLimit(request(long('u')))).overall_code).toBe('OVER_LIMIT');
    expect((await client.shouldRateLimit(request(long('v')))).overall_code).toBe('OK');
  });

  it('64 descriptors of 32 entries, none matching: OK for each, fast', async () => {
    const { client } = await start();
    // As long as they can be within the message's 64 KB.
    const entries = Array.from({ length: 32 }, (_, i) => ({ key: `k${i}`, value: 'x'.repeat(16) }));
    const started = performance.now();
    const answer = await client.shouldRateLimit({
      domain: 'edge',
      descriptors: Array.from({ length: 64 }, () => ({ entries })),
    });
    expect(performance.now() - started).toBeLessThan(2000);
    expect(answer.overall_code).toBe('OK');
    expect(answer.statuses).toHaveLength(64);
  });

  it('the largest requests: over 64 KB RESOURCE_EXHAUSTED, 5,000 descriptors INVALID_ARGUMENT, and the service keeps serving', async () => {
    const { client, address } = await start();
    const descriptor = field(2, field(1, Buffer.concat([field(1, Buffer.from('one')), field(2, Buffer.from(''))])));
    const domain = field(1, Buffer.from('edge'));
    const many = Buffer.concat([domain, ...Array.from({ length: 5000 }, () => descriptor)]);
    expect(many.length).toBeLessThan(REQUEST_LIMITS.messageBytes);
    expect((await rawCall(address, many)).error).toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: `5000 descriptors; at most ${REQUEST_LIMITS.descriptors} are allowed`,
    });
    // The outside tester's 990 KB request, and one byte over the limit.
    const huge = Buffer.concat([domain, ...Array.from({ length: 110_000 }, () => descriptor)]);
    expect((await rawCall(address, huge)).error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    const padding = REQUEST_LIMITS.messageBytes + 1 - domain.length - 4;
    const justOver = Buffer.concat([domain, field(15, Buffer.alloc(padding))]);
    expect(justOver.length).toBe(REQUEST_LIMITS.messageBytes + 1);
    expect((await rawCall(address, justOver)).error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect((await client.shouldRateLimit(oneDescriptor('edge', ['one', `after-${uniquePrefix()}`]))).overall_code).toBe(
      'OK',
    );
  });

  it('bytes that are not a request (a wire type protobuf has not): refused, nothing decided, and the service keeps serving', async () => {
    const { client, address } = await start();
    const broken = await rawCall(address, Buffer.from([0x0f, 0x01]));
    // protobufjs decodes what it can (nothing here): refused as the empty request it is.
    expect(broken.error).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: 'domain must not be empty' });
    expect((await client.shouldRateLimit(oneDescriptor('edge', ['one', 'after']))).overall_code).toBe('OK');
  });
});
