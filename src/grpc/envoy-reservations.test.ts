// The settles of an Envoy call, against a limiter stand-in that answers as told and records what
// it was asked: the failures a real Memcached does not produce on demand
// (test/envoy-reservations.test.ts has the real ones; a reserving call is one request of the
// limiter's, tested with it).
import { describe, expect, it } from 'vitest';
import { parseEnvoyTexts } from '../config/envoy-config.js';
import { LimiterInputError } from '../counting/errors.js';
import type { Limiter, SettleRequest } from '../counting/limiter.js';
import { StoreUnavailableError } from '../store/counter-store.js';
import { settleRefusalLog } from './rate-limit-service.js';
import { settleNamed, type SettleRefusal } from './envoy-reservations.js';
import type { RateLimitRequest } from './messages.js';

const RESERVATION = { id: '1700000000.AAAAAAAAAAAAAAAAAAAAAA', units: 30, seconds: 300, expiresAt: 0 };

/** A limiter answering settles from its list, in order, and recording every call. */
function stub(answers: { settle?: (Error | undefined)[] }) {
  const calls: { kind: string; request: unknown }[] = [];
  const limiter: Pick<Limiter, 'settle'> = {
    settle(request: SettleRequest) {
      calls.push({ kind: 'settle', request });
      const failure = answers.settle?.shift();
      return failure ? Promise.reject(failure) : Promise.resolve({ reserved: 30, cost: request.cost, counted: 0 });
    },
  };
  return { limiter, calls };
}

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
