// What the recorder counts of each decision: shadow_denied as a part of allowed, the
// heaviest clients by what a client was served; and of each settle, its actual cost at the
// settle's second. usage-history.test.ts follows the counts through flushes and the file;
// this is the count of one second itself.
import { describe, expect, it } from 'vitest';
import { UsageRecorder } from './recorder.js';
import type { UsageBatch } from './usage-store.js';

/** 2026-01-01T01:00:00Z: a minute's first second. */
const MINUTE_MS = Date.UTC(2026, 0, 1, 1, 0);

/** A recorder on a driven clock, writing its batches to a list. */
function recorderAt(nowMs: { value: number }) {
  const written: UsageBatch[] = [];
  const recorder = new UsageRecorder({
    stores: {
      memory: {
        write: (batch) => {
          written.push(batch);
          return Promise.resolve();
        },
      },
    },
    readFrom: 'memory',
    flushSeconds: 15,
    top: 5,
    now: () => nowMs.value,
  });
  return { recorder, written };
}

describe('the recorder', () => {
  it('counts an allowed decision a shadow limit would have refused in allowed and in shadow_denied', async () => {
    const nowMs = { value: MINUTE_MS + 100 };
    const { recorder, written } = recorderAt(nowMs);
    recorder.record('login', 'mallory', { allowed: true, shadowDenied: ['login-1m'] });
    recorder.record('login', 'mallory', { allowed: true, shadowDenied: ['login-1m', 'login-1d'] });
    // No shadow limit over: none named, whether the list is left out or empty.
    recorder.record('login', 'alice', { allowed: true });
    recorder.record('login', 'alice', { allowed: true, shadowDenied: [] });
    // Refused by an enforced limit: a denial, whatever the shadow limits said.
    recorder.record('login', 'mallory', { allowed: false, shadowDenied: ['login-1m'] });
    // Decided without counts: degraded only.
    recorder.record('login', 'bob', { allowed: true, degraded: true });
    const counts = {
      event: 'login',
      t: MINUTE_MS / 1000,
      allowed: 4,
      denied: 1,
      degraded: 1,
      shadow_denied: 2,
      settled: 0,
      settled_cost: 0,
    };
    // Still in memory: what a query adds to the store's answer.
    expect(recorder.unflushed('login').seconds).toEqual([counts]);
    nowMs.value += 60_000;
    await recorder.flush();
    expect(written.flatMap((batch) => batch.seconds)).toEqual([counts]);
    // The heaviest clients rank what they were served: mallory's shadow-denied checks as allowed.
    expect(written.flatMap((batch) => batch.minutes)).toEqual([
      {
        event: 'login',
        t: MINUTE_MS / 1000,
        allowed: [
          { feature: 'alice', count: 2 },
          { feature: 'mallory', count: 2 },
        ],
        denied: [{ feature: 'mallory', count: 1 }],
      },
    ]);
    await recorder.close();
  });

  it('writes shadow_denied 0 for an event without shadow limits, each second apart', async () => {
    const nowMs = { value: MINUTE_MS + 100 };
    const { recorder, written } = recorderAt(nowMs);
    recorder.record('search', 'alice', { allowed: true });
    recorder.record('login', 'mallory', { allowed: true, shadowDenied: ['login-1m'] });
    nowMs.value += 1000;
    recorder.record('login', 'alice', { allowed: true });
    await recorder.close();
    const t = MINUTE_MS / 1000;
    const none = { degraded: 0, settled: 0, settled_cost: 0 };
    expect(written.flatMap((batch) => batch.seconds)).toEqual([
      { event: 'search', t, allowed: 1, denied: 0, shadow_denied: 0, ...none },
      { event: 'login', t, allowed: 1, denied: 0, shadow_denied: 1, ...none },
      { event: 'login', t: t + 1, allowed: 1, denied: 0, shadow_denied: 0, ...none },
    ]);
  });

  it("counts each settle at its own second: one more settled, its actual cost in settled_cost, no client's", async () => {
    const nowMs = { value: MINUTE_MS + 100 };
    const { recorder, written } = recorderAt(nowMs);
    const t = MINUTE_MS / 1000;
    // The reserving check, counted as a decision, then its settle 2 s later, and another's.
    recorder.record('llm_tokens', 'tenant-7', { allowed: true });
    nowMs.value += 2000;
    recorder.recordSettled('llm_tokens', 1700);
    recorder.recordSettled('llm_tokens', 2200);
    // A settle that cost nothing (the request failed before any token) is a settle all the same.
    recorder.recordSettled('llm_tokens', 0);
    // An event settled in a second without a decision of its own.
    recorder.recordSettled('embeddings', 31);
    const decisions = { allowed: 0, denied: 0, degraded: 0, shadow_denied: 0 };
    const settles = [
      { event: 'llm_tokens', t: t + 2, ...decisions, settled: 3, settled_cost: 3900 },
      { event: 'embeddings', t: t + 2, ...decisions, settled: 1, settled_cost: 31 },
    ];
    // Before any flush, a query adds them from memory.
    expect(recorder.unflushed('llm_tokens').seconds).toEqual([
      { event: 'llm_tokens', t, ...decisions, allowed: 1, settled: 0, settled_cost: 0 },
      settles[0],
    ]);
    expect(recorder.unflushedEvents()).toEqual(new Set(['llm_tokens', 'embeddings']));
    nowMs.value += 60_000;
    await recorder.flush();
    expect(written.flatMap((batch) => batch.seconds)).toEqual([
      { event: 'llm_tokens', t, ...decisions, allowed: 1, settled: 0, settled_cost: 0 },
      ...settles,
    ]);
    // The heaviest clients are those of the decisions only: a settle ranks no one.
    expect(written.flatMap((batch) => batch.minutes)).toEqual([
      { event: 'llm_tokens', t, allowed: [{ feature: 'tenant-7', count: 1 }], denied: [] },
    ]);
    // Once closed, a settle that comes late is not counted (nothing would write it).
    await recorder.close();
    recorder.recordSettled('llm_tokens', 5);
    expect(recorder.pendingRows).toBe(0);
  });
});
