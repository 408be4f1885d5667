// One policy snapshot per request, through the surfaces that make several store calls for one
// request: an Envoy call that settles and checks, an Envoy call that reserves among other
// descriptors, a batch of checks, and /gate. A reload lands between the request's store calls
// (after the first), and the whole request stays under the version it started with.
import { describe, expect, it } from 'vitest';
import { parseEnvoyTexts } from '../src/config/envoy-config.js';
import { parsePolicies } from '../src/config/policies.js';
import type { Decision } from '../src/counting/decision.js';
import { createLimiter } from '../src/counting/limiter.js';
import { reloadable, type ReloadableLimiter } from '../src/counting/reloadable-limiter.js';
import { createEnvoyDecider } from '../src/grpc/envoy-decisions.js';
import { buildApp } from '../src/http/app.js';
import type { CounterStore } from '../src/store/counter-store.js';
import { createEmbeddedStore } from '../src/store/embedded-store.js';

const envoyText = (perMinute: number) => `
domain: edge
descriptors:
  - key: tenant
    rate_limit: { unit: minute, requests_per_unit: ${perMinute}, reservations: { life: 30s } }
  - key: user
    rate_limit: { unit: minute, requests_per_unit: ${perMinute} }
`;

const policyDocument = (limit: number) => ({
  events: { api: { limits: [{ limit, window: '1m' }] } },
  gateway: { feature: 'header:x-client', uri: 'header:x-original-uri', routes: [{ prefix: '/', event: 'api' }] },
});

/** A reloadable limiter on v1 (limits of 5) whose store puts v2 (limits of 500) in force after the first store call once armed. */
function reloading(): { limiter: ReloadableLimiter; arm: () => void } {
  const store = createEmbeddedStore();
  let armed = false;
  // Set once the limiters exist: the store is theirs before they are made.
  const hook: { reload: () => void } = { reload: () => undefined };
  const after = async <T>(answer: Promise<T>): Promise<T> => {
    const value = await answer;
    if (armed) {
      armed = false;
      hook.reload();
    }
    return value;
  };
  const watched: CounterStore = {
    ...store,
    incrementAndRead: (increments, reads, options) => after(store.incrementAndRead(increments, reads, options)),
    decrement: (decrements) => after(store.decrement(decrements)),
  };
  const snapshot = (limit: number, version: string) =>
    createLimiter({
      policies: parsePolicies(policyDocument(limit), `policies-${version}.yaml`),
      envoy: parseEnvoyTexts([[`envoy-${version}.yaml`, envoyText(limit)]], 'envoy'),
      store: watched,
      version,
    });
  const v1 = snapshot(5, 'v1');
  const v2 = snapshot(500, 'v2');
  const limiter = reloadable(v1);
  hook.reload = () => {
    limiter.replace(v2);
  };
  return {
    limiter,
    arm: () => {
      limiter.replace(v1);
      armed = true;
    },
  };
}

const descriptor = (key: string, value: string, hits?: number) => ({
  entries: [{ key, value }],
  ...(hits === undefined ? {} : { hitsAddend: hits }),
});

describe('a reload between the store calls of one request', () => {
  it('leaves an Envoy call that reserves among other descriptors wholly under its version', async () => {
    const { limiter, arm } = reloading();
    const decide = createEnvoyDecider({ limiter });
    arm();
    const answer = await decide({
      domain: 'edge',
      hitsAddend: 1,
      descriptors: [descriptor('tenant', 'acme', 3), descriptor('user', 'u1')],
    });
    expect(answer.policyVersion).toBe('v1');
    expect(answer.overallCode).toBe('OK');
    expect(answer.statuses.map((status) => status.currentLimit?.requestsPerUnit)).toEqual([5, 5]);
    expect(answer.statuses.map((status) => status.limitRemaining)).toEqual([2, 4]);
    expect(answer.dynamicMetadata?.memgate_reservation).toMatch(/^\d+\.[\w-]{22}$/);
    expect(limiter.version).toBe('v2');
  });

  it('leaves an Envoy call that settles and checks wholly under its version', async () => {
    const { limiter, arm } = reloading();
    const decide = createEnvoyDecider({ limiter });
    const reserved = await decide({ domain: 'edge', hitsAddend: 1, descriptors: [descriptor('tenant', 'beta', 4)] });
    const id = reserved.dynamicMetadata?.memgate_reservation;
    if (typeof id !== 'string') throw new Error('the call reserved nothing');
    arm();
    const settled = await decide({
      domain: 'edge',
      hitsAddend: 1,
      descriptors: [
        {
          entries: [
            { key: 'tenant', value: 'beta' },
            { key: 'memgate_reservation', value: id },
          ],
          hitsAddend: 1,
        },
        descriptor('user', 'u2'),
      ],
    });
    expect(settled.policyVersion).toBe('v1');
    // The user's limit as v1 has it: 5 a minute, one counted.
    expect(settled.statuses[1]).toMatchObject({ code: 'OK', limitRemaining: 4, currentLimit: { requestsPerUnit: 5 } });
  });

  it('leaves a batch of checks, and /gate, under the version each started with', async () => {
    const { limiter, arm } = reloading();
    const app = buildApp({ validateResponses: true, limiter, store: createEmbeddedStore(), maxEventLoopDelayMs: 0 });
    await app.ready();
    try {
      arm();
      const batch = await app.inject({
        method: 'POST',
        url: '/check/batch',
        payload: Array.from({ length: 4 }, (_, i) => ({ event: 'api', feature: `b${i}` })),
      });
      const decisions = batch.json<Decision[]>();
      expect(decisions.map((decision) => [decision.policyVersion, decision.limits[0]?.limit])).toEqual(
        Array.from({ length: 4 }, () => ['v1', 5]),
      );
      arm();
      const gated = await app.inject({
        method: 'GET',
        url: '/gate',
        headers: { 'x-client': 'g', 'x-original-uri': '/x' },
      });
      expect(gated.json()).toMatchObject({ policyVersion: 'v1', limits: [{ limit: 5 }] });
      expect(gated.headers['ratelimit-policy']).toBe('"api-1m";q=5;w=60');
    } finally {
      await app.close();
    }
  });
});
