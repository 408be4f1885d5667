// The exact replay against answers known by hand, and against memgate itself: the same logged
// requests decided by memgate's limiter (embedded store, driven clock) under the same policies,
// on generated logs and policies (overrides that lapse, lists, shadow limits, fixed windows).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parsePolicies, type PolicySet } from '../config/policies.js';
import { createLimiter } from '../counting/limiter.js';
import { createEmbeddedStore } from '../store/embedded-store.js';
import type { LoggedRequest } from './access-log.js';
import { Comparison } from './compare.js';
import { ExactReplay, GATEWAY_DENY_LIST } from './exact-replay.js';

const T0 = Date.UTC(2026, 10, 26, 12, 0, 0);
let line = 0;
const at = (second: number, host: string, target = '/api/x'): LoggedRequest => ({
  ms: T0 + second * 1000,
  host,
  method: 'GET',
  target,
  line: ++line,
});

const policies = (document: object) => parsePolicies(document, 'p.yaml');

describe('an exact replay', () => {
  it('places requests as /gate does and decides them on sliding logs', () => {
    const set = policies({
      gateway: {
        routes: [{ prefix: '/api/', event: 'api' }],
        unmatched: 'allow',
        deny: [{ cidr: '192.0.2.0/24' }],
      },
      events: {
        api: {
          limits: [{ limit: 3, window: '1m' }],
          overrides: [
            {
              match: { feature: '10.0.0.1' },
              limits: [{ limit: 5, window: '1m' }],
              until: new Date(T0 + 30_000).toISOString(),
            },
          ],
          allow: [{ feature: '10.0.0.9' }],
        },
      },
    });
    const replay = new ExactReplay(set);
    const fates = (requests: LoggedRequest[]) => requests.map((request) => replay.replay(request).allowed);
    // The override's 5 until second 30; then the event's 3 on what was counted.
    expect(fates([0, 1, 2, 3, 4, 5].map((s) => at(s, '10.0.0.1')))).toEqual([true, true, true, true, true, false]);
    expect(fates([31].map((s) => at(s, '10.0.0.1')))).toEqual([false]);
    // (1, 61] holds the 3 counted at 2, 3 and 4: full. (2, 62] holds 2: room for one, and so on.
    expect(fates([61, 62, 63, 63].map((s) => at(s, '10.0.0.1')))).toEqual([false, true, true, false]);
    expect(fates([0, 0, 0, 0].map((s) => at(s, '10.0.0.2')))).toEqual([true, true, true, false]);
    expect(fates([0, 0, 0, 0].map((s) => at(s, '10.0.0.9')))).toEqual([true, true, true, true]);
    expect(replay.replay(at(0, '10.0.0.3', '/elsewhere')).placement).toEqual({
      kind: 'uncounted',
      reason: 'no route (unmatched: allow)',
      feature: '10.0.0.3',
    });
    expect(replay.replay(at(0, '192.0.2.5'))).toMatchObject({
      allowed: false,
      placement: { kind: 'count', event: GATEWAY_DENY_LIST },
    });
    expect(replay.replay(at(0, '10.0.0.4', '/api/%2F..%2F..%2Flogin')).placement).toMatchObject({
      reason: 'refused as input',
    });
    expect(replay.replay({ ms: T0, host: 'h', line: 0 }).placement).toMatchObject({ reason: 'no request line' });
  });

  it('counts an IPv6 client by its /56, as /gate does, and a host name as it is', () => {
    const set = policies({
      gateway: { routes: [{ prefix: '/', event: 'api' }] },
      events: { api: { limits: [{ limit: 1, window: '1m' }] } },
    });
    const replay = new ExactReplay(set);
    expect(replay.replay(at(0, '2001:db8:0:1201::1')).allowed).toBe(true);
    expect(replay.replay(at(0, '2001:db8:0:12ff::2')).allowed).toBe(false);
    expect(replay.replay(at(0, 'in24.inetnebr.com')).placement).toMatchObject({ feature: 'in24.inetnebr.com' });
  });

  it('reports per event the clients a change newly refuses and newly admits', () => {
    const current = policies({
      gateway: { routes: [{ prefix: '/', event: 'api' }] },
      events: { api: { limits: [{ limit: 4, window: '1m' }] } },
    });
    const next = policies({
      gateway: { routes: [{ prefix: '/', event: 'api' }] },
      events: {
        api: {
          limits: [{ limit: 2, window: '1m' }],
          overrides: [{ match: { feature: 'big' }, limits: [{ limit: 10, window: '1m' }] }],
        },
      },
    });
    const requests = [
      ...[0, 1, 2, 3, 4, 5].map((s) => at(s, 'small')),
      ...[0, 1, 2, 3, 4, 5].map((s) => at(s, 'big')),
    ].sort((a, b) => a.ms - b.ms);
    const comparison = new Comparison(new ExactReplay(current), new ExactReplay(next), { top: 10, chartPoints: 500 });
    for (const request of requests) comparison.add(request);
    const report = comparison.report('log', { requests: requests.length, skipped: {} });
    const [api] = report.events;
    expect(api).toMatchObject({ event: 'api', requests: { current: 12, new: 12 }, denied: { current: 4, new: 4 } });
    expect(api?.newlyRefused).toEqual([{ client: 'small', requests: 6, deniedNow: 2, deniedNew: 4 }]);
    expect(api?.newlyAdmitted).toEqual([{ client: 'big', requests: 6, deniedNow: 2, deniedNew: 0 }]);
    expect(api?.deniedOverTime).toEqual([{ t: T0 / 1000, current: 4, new: 4 }]);
  });
});

/** Decides `requests` with memgate's limiter under `set`, every request against `event`: allowed and shadow-denied flags. */
async function throughMemgate(set: PolicySet, event: string, requests: readonly LoggedRequest[]) {
  const clock = { ms: 0 };
  const limiter = createLimiter({
    policies: set,
    store: createEmbeddedStore({ now: () => clock.ms }),
    now: () => clock.ms,
  });
  const fates: { allowed: boolean; shadowDenied: boolean }[] = [];
  for (const request of requests) {
    clock.ms = request.ms;
    const decision = await limiter.check({ event, feature: request.host });
    fates.push({ allowed: decision.allowed, shadowDenied: decision.shadowDenied !== undefined });
  }
  return fates;
}

const limitArbitrary = fc.record({
  limit: fc.integer({ min: 1, max: 6 }),
  window: fc.constantFrom('5s', '10s', '30s', '1m'),
  mode: fc.constantFrom('enforce', 'enforce', 'shadow'),
});

describe('the exact replay against memgate', () => {
  it('decides every request of generated logs as memgate does at 1 s granularity (fast-check)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          algorithm: fc.constantFrom('sliding', 'fixed'),
          limits: fc.array(limitArbitrary, { minLength: 1, maxLength: 3 }),
          override: fc.option(
            fc.record({
              limits: fc.array(limitArbitrary, { minLength: 1, maxLength: 2 }),
              until: fc.integer({ min: 0, max: 90 }),
            }),
          ),
          deny: fc.boolean(),
          allow: fc.boolean(),
        }),
        fc.array(
          fc.record({
            second: fc.integer({ min: 0, max: 90 }),
            host: fc.constantFrom('10.0.0.1', '10.0.0.2', '10.1.0.1', 'bot-1', 'ops'),
          }),
          {
            maxLength: 80,
          },
        ),
        async (shape, arrivals) => {
          const names = (limits: { limit: number; window: string; mode: string }[]) =>
            limits.map((limit, i) => ({ ...limit, name: `l${i}` }));
          const set = policies({
            events: {
              api: {
                algorithm: shape.algorithm,
                limits: names(shape.limits),
                ...(shape.override
                  ? {
                      overrides: [
                        {
                          match: { cidr: '10.0.0.0/16' },
                          limits: names(shape.override.limits),
                          until: new Date(T0 + shape.override.until * 1000).toISOString(),
                        },
                      ],
                    }
                  : {}),
                ...(shape.deny ? { deny: [{ prefix: 'bot-' }] } : {}),
                ...(shape.allow ? { allow: [{ feature: 'ops' }] } : {}),
              },
            },
          });
          const requests = arrivals
            .map(({ second, host }) => at(second, host))
            .sort((a, b) => a.ms - b.ms || a.line - b.line);
          const replay = new ExactReplay(set, { event: 'api' });
          const exact = requests.map((request) => {
            const { allowed, shadowDenied } = replay.replay(request);
            return { allowed, shadowDenied };
          });
          expect(exact).toEqual(await throughMemgate(set, 'api', requests));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('decides token buckets and calendar days as memgate does (fast-check)', async () => {
    const bucket = fc.record({
      rate: fc.constantFrom('1/s', '2/5s', '3/10s', '1/2s'),
      burst: fc.integer({ min: 1, max: 5 }),
      mode: fc.constantFrom('enforce', 'enforce', 'shadow'),
    });
    const day = fc.record({ limit: fc.integer({ min: 1, max: 6 }), mode: fc.constantFrom('enforce', 'shadow') });
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.record({ kind: fc.constant('bucket' as const), own: bucket, override: fc.option(bucket) }),
          fc.record({ kind: fc.constant('calendar' as const), own: day, override: fc.option(day) }),
        ),
        fc.array(
          fc.record({
            second: fc.integer({ min: 0, max: 90 }),
            host: fc.constantFrom('10.0.0.1', '10.0.0.2', '10.1.0.1'),
          }),
          { maxLength: 80 },
        ),
        async (shape, arrivals) => {
          // Midnight in Kolkata (18:30Z) falls 45 s into the arrivals.
          const start = shape.kind === 'calendar' ? Date.UTC(2026, 10, 26, 18, 29, 15) - T0 : 0;
          const limitOf = (limit: object) =>
            shape.kind === 'calendar' ? { ...limit, window: '1d', timezone: 'Asia/Kolkata' } : limit;
          const set = policies({
            events: {
              api: {
                algorithm: shape.kind === 'calendar' ? 'fixed' : 'token-bucket',
                limits: [limitOf(shape.own)],
                ...(shape.override
                  ? { overrides: [{ match: { cidr: '10.0.0.0/16' }, limits: [limitOf(shape.override)] }] }
                  : {}),
              },
            },
          });
          const requests = arrivals
            .map(({ second, host }) => at(start / 1000 + second, host))
            .sort((a, b) => a.ms - b.ms || a.line - b.line);
          const replay = new ExactReplay(set, { event: 'api' });
          const exact = requests.map((request) => {
            const { allowed, shadowDenied } = replay.replay(request);
            return { allowed, shadowDenied };
          });
          expect(exact).toEqual(await throughMemgate(set, 'api', requests));
        },
      ),
      { numRuns: 300 },
    );
  });
});
