import { describe, expect, it } from 'vitest';
import { createLocalDenials, type Asked, type ClientDecision } from './local-denials.js';

const denied = (retryAfter: number, resetSeconds = retryAfter): ClientDecision => ({
  allowed: false,
  limits: [{ name: 'e-10s', limit: 2, window: 10, remaining: 0, resetSeconds }],
  retryAfter,
  source: 'server',
});
const allowed = (remaining: number): ClientDecision => ({
  allowed: true,
  limits: [{ name: 'e-10s', limit: 2, window: 10, remaining, resetSeconds: 10 }],
  source: 'server',
});

/** Local denials on a clock the test drives, and a memgate the test scripts. */
function harness(maxEntries = 100) {
  let clock = 1000;
  const denials = createLocalDenials({ maxEntries, now: () => clock });
  const asked: string[] = [];
  return {
    denials,
    asked,
    advance: (ms: number) => {
      clock += ms;
    },
    /** An ask that answers `decision` for `feature`, sent at the current clock. */
    ask: (feature: string, decision: ClientDecision, delay?: Promise<unknown>) => async (): Promise<Asked> => {
      const sentAt = clock;
      asked.push(feature);
      await delay;
      return { decision, sentAt };
    },
  };
}

describe('local denials', () => {
  it('repeat a denial locally until its retryAfter, counting down, then ask again', async () => {
    const { denials, asked, advance, ask } = harness();
    expect(await denials.decide('e', 'f', 1, ask('f', denied(3)))).toMatchObject({ source: 'server', retryAfter: 3 });
    advance(400);
    expect(await denials.decide('e', 'f', 1, ask('f', allowed(1)))).toMatchObject({
      allowed: false,
      source: 'local',
      retryAfter: 3,
      limits: [{ resetSeconds: 3 }],
    });
    advance(1700); // 2.1 s after sending
    expect(await denials.decide('e', 'f', 1, ask('f', allowed(1)))).toMatchObject({ source: 'local', retryAfter: 1 });
    advance(899); // 2.999 s
    expect((await denials.decide('e', 'f', 1, ask('f', allowed(1)))).source).toBe('local');
    advance(1); // 3 s: never longer than memgate said
    expect(await denials.decide('e', 'f', 1, ask('f', allowed(1)))).toMatchObject({ allowed: true, source: 'server' });
    expect(asked).toEqual(['f', 'f']);
  });

  it('keep denials per event, feature and cost', async () => {
    const { denials, asked, ask } = harness();
    await denials.decide('e', 'f', 2, ask('f/2', denied(5)));
    expect((await denials.decide('e', 'f', 2, ask('f/2', allowed(0)))).source).toBe('local');
    expect((await denials.decide('e', 'f', 1, ask('f/1', allowed(0)))).source).toBe('server');
    expect((await denials.decide('e', 'g', 2, ask('g/2', allowed(0)))).source).toBe('server');
    expect((await denials.decide('other', 'f', 2, ask('other', allowed(0)))).source).toBe('server');
    expect(asked).toEqual(['f/2', 'f/1', 'g/2', 'other']);
  });

  it('send one check of a denied key at a time once its denial ran out: the others wait and are answered by its denial', async () => {
    const { denials, asked, advance, ask } = harness();
    await denials.decide('e', 'f', 1, ask('f', denied(1)));
    advance(1000);
    const slowly: { answer?: () => void } = {};
    const slow = new Promise<void>((resolve) => {
      slowly.answer = resolve;
    });
    const all = Array.from({ length: 1000 }, () => denials.decide('e', 'f', 1, ask('f', denied(2), slow)));
    await Promise.resolve();
    expect(asked).toHaveLength(2);
    slowly.answer?.();
    const decisions = await Promise.all(all);
    expect(decisions.filter((d) => d.source === 'server')).toHaveLength(1);
    expect(decisions.slice(1).every((d) => d.source === 'local' && d.retryAfter === 2)).toBe(true);
    expect(asked).toHaveLength(2);
  });

  it('after an allowed probe, release the waiters together only when they all fit in what remains', async () => {
    const { denials, asked, advance, ask } = harness();
    await denials.decide('e', 'f', 1, ask('f', denied(1)));
    advance(1000);
    // Room for one: the waiters go one at a time, and the first denied answers the rest.
    let turn = 0;
    const scripted = () => {
      turn++;
      return ask('f', turn <= 2 ? allowed(0) : denied(4))();
    };
    const decisions = await Promise.all(Array.from({ length: 50 }, () => denials.decide('e', 'f', 1, scripted)));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(2);
    expect(decisions.filter((d) => d.source === 'server')).toHaveLength(3);
    expect(asked).toHaveLength(1 + 3);

    advance(4000);
    // Room for all of them: they go together, and the key is forgotten.
    const released = await Promise.all(
      Array.from({ length: 5 }, () => denials.decide('e', 'f', 1, ask('f', allowed(10)))),
    );
    expect(released.every((d) => d.allowed && d.source === 'server')).toBe(true);
    expect(denials.size).toBe(0);
  });

  it('let a rejected probe go without holding the key', async () => {
    const { denials, advance, ask } = harness();
    await denials.decide('e', 'f', 1, ask('f', denied(1)));
    advance(1000);
    await expect(denials.decide('e', 'f', 1, () => Promise.reject(new Error('unknown_event')))).rejects.toThrow();
    expect((await denials.decide('e', 'f', 1, ask('f', denied(1)))).source).toBe('server');
  });

  it('forget a feature on reset, every cost of it', async () => {
    const { denials, ask } = harness();
    await denials.decide('e', 'f', 1, ask('f', denied(9)));
    await denials.decide('e', 'f', 3, ask('f', denied(9)));
    await denials.decide('e', 'g', 1, ask('g', denied(9)));
    denials.forget('e', 'f');
    expect(denials.size).toBe(1);
    expect((await denials.decide('e', 'f', 3, ask('f', allowed(0)))).source).toBe('server');
  });

  it('hold at most maxEntries keys, forgetting the oldest', async () => {
    const { denials, ask } = harness(3);
    for (const feature of ['a', 'b', 'c', 'd']) await denials.decide('e', feature, 1, ask(feature, denied(60)));
    expect(denials.size).toBe(3);
    expect((await denials.decide('e', 'a', 1, ask('a', allowed(0)))).source).toBe('server');
    expect((await denials.decide('e', 'd', 1, ask('d', allowed(0)))).source).toBe('local');
  });
});
