import { describe, expect, it } from 'vitest';
import {
  createEmbeddedStore,
  createLimiter,
  createMemcachedStore,
  LimiterInputError,
  PolicyError,
} from '../src/index.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';

describe('memgate as a library', () => {
  const memcached = useMemcached();

  it('limits with policies given inline, on Memcached', async () => {
    const store = createMemcachedStore({ servers: memcached().servers });
    const limiter = createLimiter({
      policies: { events: { login: { limits: [{ limit: 2, window: '1m' }] } } },
      store,
      keyPrefix: uniquePrefix(),
    });
    const results = [];
    for (let i = 0; i < 3; i++)
      results.push((await limiter.check({ event: 'login', feature: 'alice@example.com' })).allowed);
    expect(results).toEqual([true, true, false]);
    await store.close();
  });

  it('refuses invalid inline policies with the same messages as a file', () => {
    expect(() =>
      createLimiter({
        policies: { events: { login: { limits: [{ limit: 2, window: '1w' }] } } },
        store: createEmbeddedStore(),
      }),
    ).toThrow(PolicyError);
  });

  it('throws LimiterInputError, with a code, for bad requests', async () => {
    const limiter = createLimiter({
      policies: { events: { login: { limits: [{ limit: 2, window: 60 }] } } },
      store: createEmbeddedStore(),
    });
    await expect(limiter.check({ event: 'login', feature: '' })).rejects.toBeInstanceOf(LimiterInputError);
  });
});
