// The interleaving behind a request refused while the limit had room for it, made to happen
// every time against a real Memcached: another instance's increment, over the limit, is
// applied while its answer is held on the way back, so its take-back comes late; the refused
// request's count and first read both see the same counts, over the limit. Replies are held
// and calls sent late by a gate in front of each instance's store; every count, take-back and
// read is Memcached's own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter } from '../src/counting/limiter.js';
import type { CounterStore } from '../src/store/counter-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';

const memcached = useMemcached();
const LIMIT = 30;
const policies = { events: { api: { limits: [{ limit: LIMIT, window: '1m' }] } } };

/** A promise the test opens when it chooses. */
function gate(): { open: () => void; opened: Promise<void> } {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

/** What a gated store's caller is doing: its nth counting or reading call (from 0), or a take-back. */
interface Call {
  readonly kind: 'incrementAndRead' | 'decrement';
  readonly index: number;
}

/** When a gated store sends a call, and when it hands its answer back. */
interface Gates {
  send?(call: Call): Promise<void> | void;
  answered?(call: Call): Promise<void> | void;
}

/** `store`, each call of which waits for `gates.send` before it leaves and for `gates.answered` before its answer is handed back. */
function gated(store: CounterStore, gates: Gates): CounterStore {
  const counts = { incrementAndRead: 0, decrement: 0 };
  const through = async <T>(kind: Call['kind'], run: () => Promise<T>): Promise<T> => {
    const call = { kind, index: counts[kind]++ };
    await gates.send?.(call);
    const answer = await run();
    await gates.answered?.(call);
    return answer;
  };
  return new Proxy(store, {
    get(target, name, receiver) {
      if (name === 'incrementAndRead')
        return (...args: Parameters<CounterStore['incrementAndRead']>) =>
          through('incrementAndRead', () => target.incrementAndRead(...args));
      if (name === 'decrement')
        return (...args: Parameters<CounterStore['decrement']>) =>
          through('decrement', () => target.decrement(...args));
      return Reflect.get(target, name, receiver) as unknown;
    },
  });
}

let stores: CounterStore[] = [];
let keyPrefix: string;
beforeAll(() => {
  keyPrefix = uniquePrefix();
  stores = [0, 1].map(() => createMemcachedStore({ servers: memcached().servers, timeoutMs: 5000 }));
});
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
});

describe('a take-back still on its way from another instance', () => {
  it('refuses no request for counts over the limit that another instance is still taking back', async () => {
    const [near, far] = stores as [CounterStore, CounterStore];
    const feature = `f${uniquePrefix()}`;
    await createLimiter({ policies, store: near, keyPrefix }).check({ event: 'api', feature, cost: 28 });

    // The far instance's request of cost 12 can never fit in the 2 left: counted (40), its
    // answer held until the near request has counted and read once.
    const farCounted = gate();
    const farAnswered = gate();
    const farTookBack = gate();
    const farInstance = createLimiter({
      policies,
      keyPrefix,
      store: gated(far, {
        async answered({ kind, index }) {
          if (kind === 'incrementAndRead' && index === 0) {
            farCounted.open();
            await farAnswered.opened;
          }
          if (kind === 'decrement' && index === 0) farTookBack.open();
        },
      }),
    });
    // The near request of cost 1: its count (41) and first read (40) see the far cost; a later
    // read leaves once the far take-back has landed.
    const nearInstance = createLimiter({
      policies,
      keyPrefix,
      store: gated(near, {
        async send({ kind, index }) {
          if (kind === 'incrementAndRead' && index >= 2) await farTookBack.opened;
        },
        answered({ kind, index }) {
          if (kind === 'incrementAndRead' && index === 1) farAnswered.open();
        },
      }),
    });

    const farAnswer = farInstance.check({ event: 'api', feature, cost: 12 });
    await farCounted.opened;
    const nearAnswer = await nearInstance.check({ event: 'api', feature, cost: 1 });
    expect((await farAnswer).allowed).toBe(false);
    const room = (await createLimiter({ policies, store: near, keyPrefix }).peek({ event: 'api', feature })).limits[0]
      ?.remaining;
    // The far request left 2: the near one fits.
    expect(nearAnswer).toMatchObject({ allowed: true, limits: [{ remaining: 1 }] });
    expect(room).toBe(1);
  });
});
