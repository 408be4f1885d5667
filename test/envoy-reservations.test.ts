// Costs known after the response, through Envoy (docs/envoy.md): a grpc-js client makes the two
// calls Envoy's ratelimit filter makes for an LLM route, against the service as main.ts starts
// it, counting in a real Memcached. The request's call reserves its hits_addend and answers the
// reservation's id in dynamic_metadata; the stream-done call (apply_on_stream_done) names it in
// a memgate_reservation entry, with the actual cost as hits_addend, and settles it.
import { describe, expect, it } from 'vitest';
import type { RlsClient, WireDescriptorIn, WireRequestIn, WireResponseOut } from '../scripts/lib/rls-client.js';
import { useEnvoyServices } from './helpers/envoy-service.js';
import { useMemcached } from './helpers/memcached.js';
import { awayFromWindowEnd, UNIT_SECONDS } from './helpers/window.js';

const memcached = useMemcached();

const CONFIG = `
domain: llm
descriptors:
  - key: tenant
    rate_limit: { unit: day, requests_per_unit: 100000, name: tokens, reservations: { life: 5m } }
  - key: model
    rate_limit: { unit: day, requests_per_unit: 5000, reservations: {} }
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 2 }
`;

const start = useEnvoyServices(memcached, CONFIG);

/** What Envoy's filter stores as dynamic metadata under envoy.filters.http.ratelimit. */
type Struct = { fields: Record<string, { stringValue?: string; string_value?: string }> } | null;
type Answer = WireResponseOut & { dynamic_metadata: Struct };

const call = async (client: RlsClient, ...descriptors: WireDescriptorIn[]): Promise<Answer> =>
  (await client.shouldRateLimit({ domain: 'llm', descriptors } satisfies WireRequestIn)) as Answer;

const entry = (key: string, value: string) => ({ key, value });
/** A descriptor of the route's request path: its entries, and the estimate as its hits_addend. */
const asking = (hits: number | undefined, ...pairs: [string, string][]): WireDescriptorIn => ({
  entries: pairs.map(([key, value]) => entry(key, value)),
  ...(hits === undefined ? {} : { hits_addend: { value: hits } }),
});
/** The stream-done call's descriptor: the same entries, the reservation's id, the actual cost. */
const settling = (id: string, cost: number, ...pairs: [string, string][]): WireDescriptorIn => ({
  entries: [...pairs.map(([key, value]) => entry(key, value)), entry('memgate_reservation', id)],
  hits_addend: { value: cost },
});

const reservationOf = (answer: Answer): string | undefined => {
  const value = answer.dynamic_metadata?.fields.memgate_reservation;
  return value?.stringValue ?? value?.string_value;
};

/** Away from a minute's edges: the user's fixed minute must hold a test's every call. */
const awayFromMinuteEnd = () => awayFromWindowEnd(60);

/** What the limit has left, asked with a hits_addend of 0 (counts nothing). */
const remaining = async (client: RlsClient, ...pairs: [string, string][]) =>
  (await call(client, asking(0, ...pairs))).statuses[0]?.limit_remaining;

describe('reservations through ShouldRateLimit', () => {
  it('reserves hits_addend, answers its id in dynamic_metadata, and a second call settles it at the actual cost, once', async () => {
    const { client, url, lines } = await start();
    // Its limit is a day's fixed window: every call below must fall in one.
    await awayFromWindowEnd(UNIT_SECONDS.DAY);
    const tenant: [string, string] = ['tenant', 'acme'];
    const reserved = await call(client, asking(1000, tenant));
    expect(reserved.overall_code).toBe('OK');
    expect(reserved.statuses[0]).toMatchObject({
      code: 'OK',
      limit_remaining: 99_000,
      current_limit: { name: 'tokens', requests_per_unit: 100_000, unit: 'DAY' },
    });
    const id = reservationOf(reserved) ?? '';
    expect(id).toMatch(/^[0-9]+\.[A-Za-z0-9_-]{22}$/);
    expect(Object.keys(reserved.dynamic_metadata?.fields ?? {})).toEqual(['memgate_reservation']);
    expect(await remaining(client, tenant)).toBe(99_000);

    // The response cost 1,700: the stream-done call counts 700 more than reserved.
    const settled = await call(client, settling(id, 1700, tenant));
    expect(settled.overall_code).toBe('OK');
    expect(settled.statuses[0]).toMatchObject({ code: 'OK', current_limit: { name: 'tokens' } });
    expect(settled.dynamic_metadata).toBeNull();
    expect(await remaining(client, tenant)).toBe(98_300);

    // Once: a repeated stream-done call changes nothing, whatever it says it cost.
    expect((await call(client, settling(id, 5000, tenant))).overall_code).toBe('OK');
    expect(await remaining(client, tenant)).toBe(98_300);

    // A forged id, well formed or not, or a real one under another tenant, changes nothing either.
    const forged = `${Math.floor(Date.now() / 1000)}.${'A'.repeat(22)}`;
    for (const [fake, pair] of [
      [forged, tenant],
      ['not-an-id', tenant],
      [id, ['tenant', 'globex']],
    ] as [string, [string, string]][]) {
      const answer = await call(client, settling(fake, 50_000, pair));
      expect(answer.overall_code).toBe('OK');
      expect(answer.dynamic_metadata).toBeNull();
    }
    expect(await remaining(client, tenant)).toBe(98_300);
    expect(await remaining(client, ['tenant', 'globex'])).toBe(100_000);

    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/memgate_reservations_settled_total\{event="envoy:llm\.tenant"\} 1\n/);
    expect(metrics).toMatch(/memgate_reservation_cost_total\{event="envoy:llm\.tenant",as="actual"\} 1700\n/);
    // Logged, one line per event and reason a minute: the three unknown ids make one.
    const refusals = lines
      .map((line) => JSON.parse(line) as { code?: string; msg: string })
      .filter((line) => line.msg.startsWith('a reservation named by an Envoy call'));
    expect(refusals.map((line) => line.code)).toEqual(['reservation_settled', 'unknown_reservation']);
  });

  it('refunds what a smaller cost leaves, and answers OVER_LIMIT with no reservation', async () => {
    const { client } = await start();
    // Its limit is a day's fixed window: every call below must fall in one.
    await awayFromWindowEnd(UNIT_SECONDS.DAY);
    const model: [string, string] = ['model', 'm1'];
    const first = await call(client, asking(3000, model));
    const id = reservationOf(first) ?? '';
    expect(first.statuses[0]?.limit_remaining).toBe(2000);
    // 2,001 more than remains: refused, nothing counted, no reservation.
    const over = await call(client, asking(2001, model));
    expect(over.overall_code).toBe('OVER_LIMIT');
    expect(over.dynamic_metadata).toBeNull();
    // More than the limit could ever hold: refused as any hits_addend beyond requests_per_unit.
    expect((await call(client, asking(6000, model))).overall_code).toBe('OVER_LIMIT');
    expect(await remaining(client, model)).toBe(2000);
    // The response cost 400 of the 3,000 reserved.
    await call(client, settling(id, 400, model));
    expect(await remaining(client, model)).toBe(4600);
    // A cost of 0 gives it all back; a request-level hits_addend reserves too.
    const second = (await client.shouldRateLimit({
      domain: 'llm',
      descriptors: [asking(undefined, model)],
      hits_addend: 600,
    })) as Answer;
    expect(second.statuses[0]?.limit_remaining).toBe(4000);
    await call(client, settling(reservationOf(second) ?? '', 0, model));
    expect(await remaining(client, model)).toBe(4600);
  });

  it("decides a reservation with the call's other descriptors, all or nothing", async () => {
    const { client } = await start();
    await awayFromMinuteEnd();
    const user: [string, string] = ['user', 'u1'];
    const tenant: [string, string] = ['tenant', 'initech'];
    const both = () => call(client, asking(undefined, user), asking(1000, tenant));
    const ids = [];
    for (let i = 0; i < 2; i++) {
      const answer = await both();
      expect(answer.overall_code).toBe('OK');
      ids.push(reservationOf(answer));
    }
    expect(ids.every((id) => id !== undefined) && ids[0] !== ids[1]).toBe(true);
    // The user's third request in the minute: refused, so the tenant reserves nothing.
    const refused = await both();
    expect(refused.overall_code).toBe('OVER_LIMIT');
    expect(refused.statuses.map((s) => s.code)).toEqual(['OVER_LIMIT', 'OK']);
    expect(refused.statuses[1]?.limit_remaining).toBe(98_000);
    expect(refused.dynamic_metadata).toBeNull();
    expect(await remaining(client, tenant)).toBe(98_000);
    // Both settle, in one stream-done call each.
    await call(client, settling(ids[0] ?? '', 10, tenant));
    await call(client, settling(ids[1] ?? '', 20, tenant));
    expect(await remaining(client, tenant)).toBe(99_970);
  });

  it('reserves for one descriptor per call: with two that take reservations, each counts its hits_addend', async () => {
    const { client, lines } = await start();
    const answer = await call(client, asking(10, ['tenant', 'hooli']), asking(20, ['model', 'm2']));
    expect(answer.overall_code).toBe('OK');
    expect(answer.dynamic_metadata).toBeNull();
    expect(answer.statuses.map((s) => s.limit_remaining)).toEqual([99_990, 4980]);
    expect(lines.join('')).toContain('hold several descriptors whose limits take reservations');
  });

  it('never lets a memgate_reservation entry it cannot verify count, or pass a full limit', async () => {
    const { client } = await start();
    await awayFromMinuteEnd();
    const user: [string, string] = ['user', 'u2'];
    expect((await call(client, asking(undefined, user))).overall_code).toBe('OK');
    // A limit without reservations: the entry makes the descriptor a question, counting nothing.
    const forged = await call(client, settling('1.AAAAAAAAAAAAAAAAAAAAAA', 1, user));
    expect(forged.statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 1 });
    expect((await call(client, asking(undefined, user))).overall_code).toBe('OK');
    // The limit is full: the same entry is refused as the request would be.
    expect((await call(client, settling('1.AAAAAAAAAAAAAAAAAAAAAA', 1, user))).overall_code).toBe('OVER_LIMIT');
    expect((await call(client, settling('x', 0, ['tenant', 'full']), asking(undefined, user))).overall_code).toBe(
      'OVER_LIMIT',
    );
  });
});
