// The steps of a reserving Envoy call and of a settling one, against a limiter stand-in that
// answers as told and records what it was asked: the races and failures a real Memcached does
// not produce on demand (test/envoy-reservations.test.ts has the real ones).
import { describe, expect, it } from 'vitest';
import { parseEnvoyTexts } from '../config/envoy-config.js';
import type { Decision } from '../counting/decision.js';
import { LimiterInputError } from '../counting/errors.js';
import type { CheckOrReserve, SettleRequest, TogetherCheck, TogetherDecision } from '../counting/limiter.js';
import { StoreUnavailableError } from '../store/counter-store.js';
import { settleRefusalLog } from './rate-limit-service.js';
import { decideReserving, settleNamed, type EnvoyLimiter, type SettleRefusal } from './envoy-reservations.js';
import type { RateLimitRequest } from './messages.js';

const status = (remaining: number, limit = 100) => ({ name: 'l', limit, window: 86_400, remaining, resetSeconds: 0 });
const allowed = (remaining: number): Decision => ({ allowed: true, limits: [status(remaining)] });
const denied = (remaining: number): Decision => ({ allowed: false, limits: [status(remaining)], retryAfter: 7 });
const RESERVATION = { id: '1700000000.AAAAAAAAAAAAAAAAAAAAAA', units: 30, seconds: 300, expiresAt: 0 };

/** A limiter answering each kind of call from its list, in order, and recording every call. */
function stub(answers: {
  together?: ((checks: readonly TogetherCheck[]) => TogetherDecision)[];
  check?: Decision[];
  settle?: (Error | undefined)[];
}) {
  const calls: { kind: string; request: unknown }[] = [];
  const limiter: EnvoyLimiter = {
    checkTogether(checks) {
      calls.push({ kind: 'together', request: checks });
      const next = answers.together?.shift();
      if (!next) throw new Error('unexpected checkTogether');
      return Promise.resolve(next(checks));
    },
    check(request: CheckOrReserve) {
      calls.push({ kind: 'check', request });
      const next = answers.check?.shift();
      return next ? Promise.resolve(next) : Promise.reject(new Error('unexpected check'));
    },
    settle(request: SettleRequest) {
      calls.push({ kind: 'settle', request });
      const failure = answers.settle?.shift();
      return failure ? Promise.reject(failure) : Promise.resolve({ reserved: 30, cost: request.cost, counted: 0 });
    },
  };
  return { limiter, calls };
}

const user: TogetherCheck = { event: 'envoy:d.user', feature: 'u', cost: 1, peek: false, enforced: true };
const tenant: TogetherCheck = { event: 'envoy:d.tenant', feature: 't', cost: 30, peek: false, enforced: true };
const all = (decisions: Decision[]) => (): TogetherDecision => ({
  allowed: decisions.every((d) => d.allowed),
  checks: decisions,
});

describe('decideReserving', () => {
  it('reserves a lone check with Limiter.check, and answers its reservation', async () => {
    const { limiter, calls } = stub({ check: [{ ...allowed(70), reservation: RESERVATION }] });
    const outcome = await decideReserving(limiter, [tenant], 0, () => undefined);
    expect(outcome).toEqual({
      allowed: true,
      checks: [{ ...allowed(70), reservation: RESERVATION }],
      reservation: RESERVATION,
    });
    expect(calls).toEqual([{ kind: 'check', request: { event: 'envoy:d.tenant', feature: 't', reserve: 30 } }]);
  });

  it('asks the whole call first: refused there, it is decided as a call without a reservation', async () => {
    const { limiter, calls } = stub({ together: [all([denied(0), allowed(100)]), all([denied(0), allowed(100)])] });
    const outcome = await decideReserving(limiter, [user, tenant], 1, () => undefined);
    expect(outcome).toEqual({ allowed: false, checks: [denied(0), allowed(100)] });
    expect(calls.map((call) => call.kind)).toEqual(['together', 'together']);
    expect((calls[0]?.request as TogetherCheck[]).every((check) => check.peek)).toBe(true);
    // Counted as any call (a refused one counts nothing), so its refusals are told as checks'.
    expect(calls[1]?.request).toEqual([user, tenant]);
    // Allowed after all (room was freed meanwhile): the reserving check counted as a plain hit, no reservation.
    const raced = stub({ together: [all([denied(0), allowed(100)]), all([allowed(0), allowed(70)])] });
    expect(await decideReserving(raced.limiter, [user, tenant], 1, () => undefined)).toEqual({
      allowed: true,
      checks: [allowed(0), allowed(70)],
    });
  });

  it('counts the other checks once the reservation is made, and refuses the call when it is not', async () => {
    const made = stub({
      together: [all([allowed(5), allowed(100)]), all([allowed(4)])],
      check: [{ ...allowed(70), reservation: RESERVATION }],
    });
    const outcome = await decideReserving(made.limiter, [user, tenant], 1, () => undefined);
    expect(outcome).toMatchObject({ allowed: true, reservation: RESERVATION, checks: [allowed(4), allowed(70)] });
    expect(made.calls.map((c) => c.kind)).toEqual(['together', 'check', 'together']);
    expect(made.calls[2]?.request).toEqual([user]);

    const refused = stub({ together: [all([allowed(5), allowed(100)])], check: [denied(10)] });
    const answer = await decideReserving(refused.limiter, [user, tenant], 1, () => undefined);
    expect(answer).toEqual({ allowed: false, checks: [allowed(5), denied(10)], retryAfter: 7 });
    expect(refused.calls.map((c) => c.kind)).toEqual(['together', 'check']);
  });

  it('takes the reservation back when another call took the room meanwhile, showing its counts without it', async () => {
    const refusals: Omit<SettleRefusal, 'domain'>[] = [];
    const raced = stub({
      together: [all([allowed(1), allowed(100)]), all([denied(0)])],
      check: [{ ...allowed(70), reservation: RESERVATION }],
    });
    const outcome = await decideReserving(raced.limiter, [user, tenant], 1, (r) => refusals.push(r));
    expect(outcome).toEqual({ allowed: false, checks: [denied(0), allowed(100)] });
    expect(raced.calls[3]).toEqual({
      kind: 'settle',
      request: { event: 'envoy:d.tenant', feature: 't', id: RESERVATION.id, cost: 0 },
    });
    expect(refusals).toEqual([]);

    // When even that fails, the units stay counted (too strict, never too lenient), and it is told.
    const stuck = stub({
      together: [all([allowed(1), allowed(100)]), all([denied(0)])],
      check: [{ ...allowed(70), reservation: RESERVATION }],
      settle: [new StoreUnavailableError('127.0.0.1:11211 did not answer')],
    });
    await decideReserving(stuck.limiter, [user, tenant], 1, (r) => refusals.push(r));
    expect(refusals).toMatchObject([{ event: 'envoy:d.tenant', code: 'take_back_failed' }]);
  });

  it('decides a shadow reservation as if enforced, but never refuses the call for it', async () => {
    const shadow = { ...tenant, enforced: false };
    const lone = stub({ check: [denied(10)] });
    expect(await decideReserving(lone.limiter, [shadow], 0, () => undefined)).toEqual({
      allowed: true,
      checks: [denied(10)],
    });
    const mixed = stub({
      // The question refuses nothing for a shadow check: checkTogether leaves it out of `allowed`.
      together: [() => ({ allowed: true, checks: [allowed(5), denied(10)] }), all([allowed(4)])],
      check: [denied(10)],
    });
    expect(await decideReserving(mixed.limiter, [user, shadow], 1, () => undefined)).toEqual({
      allowed: true,
      checks: [allowed(4), denied(10)],
    });
  });
});

const CONFIG = parseEnvoyTexts(
  [
    [
      'rl.yaml',
      `domain: d
descriptors:
  - key: tenant
    rate_limit: { unit: day, requests_per_unit: 1000, reservations: { life: 5m } }
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 5 }
`,
    ],
  ],
  'rl.yaml',
);

const settleCall = (entries: [string, string][], hits?: number): RateLimitRequest => ({
  domain: 'd',
  hitsAddend: 0,
  descriptors: [
    { entries: entries.map(([key, value]) => ({ key, value })), ...(hits === undefined ? {} : { hitsAddend: hits }) },
  ],
});

describe('settleNamed', () => {
  it('settles the reservation a memgate_reservation entry names, at the descriptor hits_addend', async () => {
    const { limiter, calls } = stub({});
    const refusals: SettleRefusal[] = [];
    const pass = await settleNamed(
      limiter,
      CONFIG,
      settleCall(
        [
          ['tenant', 'acme'],
          ['memgate_reservation', RESERVATION.id],
        ],
        1700,
      ),
      (r) => refusals.push(r),
    );
    expect(calls).toEqual([
      { kind: 'settle', request: { event: 'envoy:d.tenant', feature: 'acme', id: RESERVATION.id, cost: 1700 } },
    ]);
    expect(pass.settled[0]).toMatchObject({ requestsPerUnit: 1000 });
    expect(refusals).toEqual([]);
  });

  it('passes calls without the entry through untouched, and asks nothing of the limiter', async () => {
    const { limiter, calls } = stub({});
    const request = settleCall([['tenant', 'acme']], 5);
    const pass = await settleNamed(limiter, CONFIG, request, () => undefined);
    expect(pass.descriptors).toBe(request.descriptors);
    expect(calls).toEqual([]);
  });

  it('answers a settle made already as settled, and turns one it cannot verify into a question', async () => {
    const refusals: SettleRefusal[] = [];
    const cases: [Error | undefined, [string, string][], boolean][] = [
      [new LimiterInputError('reservation_settled', 'settled already'), [['tenant', 'acme']], true],
      [new LimiterInputError('unknown_reservation', 'not one memgate gave'), [['tenant', 'acme']], false],
      [new LimiterInputError('reservation_expired', 'too late'), [['tenant', 'acme']], false],
      // Memcached is down: the reservation stays counted; the call is answered OK.
      [new StoreUnavailableError('no answer'), [['tenant', 'acme']], true],
    ];
    for (const [failure, entries, settled] of cases) {
      const { limiter } = stub({ settle: [failure] });
      const pass = await settleNamed(
        limiter,
        CONFIG,
        settleCall([...entries, ['memgate_reservation', RESERVATION.id]], 10),
        (r) => refusals.push(r),
      );
      expect(pass.settled[0] !== undefined).toBe(settled);
      expect(pass.descriptors[0]).toEqual(
        settled
          ? {
              entries: [...entries, ['memgate_reservation', RESERVATION.id]].map(([key, value]) => ({ key, value })),
              hitsAddend: 10,
            }
          : { entries: [{ key: 'tenant', value: 'acme' }], hitsAddend: 0 },
      );
    }
    expect(refusals.map((r) => r.code)).toEqual([
      'reservation_settled',
      'unknown_reservation',
      'reservation_expired',
      'store_unavailable',
    ]);
  });

  it('settles nothing for a limit without reservations, no limit, or two entries', async () => {
    const refusals: SettleRefusal[] = [];
    const { limiter, calls } = stub({});
    for (const entries of [
      [
        ['user', 'u1'],
        ['memgate_reservation', RESERVATION.id],
      ],
      [
        ['nothing', 'x'],
        ['memgate_reservation', RESERVATION.id],
      ],
      [['memgate_reservation', RESERVATION.id]],
      [
        ['tenant', 'acme'],
        ['memgate_reservation', RESERVATION.id],
        ['memgate_reservation', RESERVATION.id],
      ],
    ] as [string, string][][]) {
      const pass = await settleNamed(limiter, CONFIG, settleCall(entries, 3), (r) => refusals.push(r));
      expect(pass.settled[0]).toBeUndefined();
      expect(pass.descriptors[0]?.hitsAddend).toBe(0);
      expect(pass.descriptors[0]?.entries.some((e) => e.key === 'memgate_reservation')).toBe(false);
    }
    expect(calls).toEqual([]);
    expect(refusals.map((r) => r.code)).toEqual(['reserve_off', 'reserve_off', 'reserve_off', 'unknown_reservation']);
  });
});

describe('settleRefusalLog', () => {
  it('logs one line per event and reason a minute, saying how many it left out', () => {
    const lines: object[] = [];
    const clock = { ms: 0 };
    const log = settleRefusalLog({ warn: (details: object) => lines.push(details) } as never, () => clock.ms);
    const refusal = { domain: 'd', event: 'envoy:d.tenant', code: 'unknown_reservation', message: 'm' };
    log(refusal);
    log(refusal);
    log({ ...refusal, code: 'reservation_expired' });
    clock.ms += 59_000;
    log(refusal);
    clock.ms += 1000;
    log(refusal);
    expect(lines).toEqual([refusal, { ...refusal, code: 'reservation_expired' }, { ...refusal, leftOut: 2 }]);
  });
});
