// Hostile tests of what gives quota back (/lease/return, /admin/refund) against a real
// memgate process on a real memcached: a take-back must only ever remove the units it
// counted, never counts that other checks put in a bucket after a reset.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';
import { startServiceProcess, type ServiceProcess } from './helpers/service-process.js';

const TOKEN = 'hostile-takebacks-token-0123456789';
const LIMIT = 10;
// Minute buckets: a grant (or a counted check), a reset or reload, and the checks after it share one.
const POLICIES = (granularity: string) => `events:
  api:
    limits:
      - { limit: ${LIMIT}, window: 2m, granularity: ${granularity} }
    lease: { maxUnits: 5, life: 2s }
`;

// A test may wait for the next minute first.
vi.setConfig({ testTimeout: 30_000 });

const memcached = useMemcached();
let folder: string;
let memgate: ServiceProcess;
beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'memgate-hostile-'));
  writeFileSync(join(folder, 'policies.yaml'), POLICIES('1m'));
  memgate = await startServiceProcess({
    MEMCACHED_SERVERS: memcached().servers,
    MEMGATE_CONFIG: join(folder, 'policies.yaml'),
    MEMGATE_ADMIN_TOKEN: TOKEN,
    MEMGATE_KEY_PREFIX: uniquePrefix(),
  });
});
afterAll(async () => {
  await memgate.stop();
});

async function post(
  path: string,
  body: unknown,
  admin = false,
): Promise<{ status: number; body: { lease?: { id: string } } }> {
  const response = await fetch(`${memgate.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(admin ? { authorization: `Bearer ${TOKEN}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as { lease?: { id: string } } };
}

/** Admitted /checks of `feature` until the first denial (at most `most`). */
async function admitted(feature: string, most = 2 * LIMIT): Promise<number> {
  let count = 0;
  while (count < most && (await post('/check', { event: 'api', feature })).status === 200) count++;
  return count;
}

/** Waits until the minute has at least 10 s left, so what follows (well under a second) shares one minute bucket. */
async function earlyInMinute(): Promise<void> {
  const second = new Date().getUTCSeconds();
  if (second > 50) await sleep((62 - second) * 1000);
}

let features = 0;
const feature = () => `hostile-${String(++features)}`;

describe('take-backs never remove counts they did not make', () => {
  it('a lease returned after a reset of its bucket gives back nothing the checks after the reset counted', async () => {
    await earlyInMinute();
    const who = feature();
    const lease = await post('/lease', { event: 'api', feature: who, units: 5 });
    expect(lease.status).toBe(200);
    expect((await post('/admin/reset', { event: 'api', feature: who }, true)).status).toBe(200);
    const afterReset = await admitted(who);
    expect(afterReset).toBe(LIMIT);
    const returned = await post('/lease/return', { event: 'api', feature: who, id: lease.body.lease?.id, unused: 5 });
    // Whatever the return says, the window after the reset holds LIMIT admitted checks.
    expect(returned.status).toBeLessThan(500);
    expect(await admitted(who), 'admitted after the return, on top of a full window').toBe(0);
  });

  it('a refund of a check counted before a reset takes nothing from the checks after it', async () => {
    await earlyInMinute();
    const who = feature();
    const at = Date.now();
    expect((await post('/check', { event: 'api', feature: who })).status).toBe(200);
    expect((await post('/admin/reset', { event: 'api', feature: who }, true)).status).toBe(200);
    expect(await admitted(who)).toBe(LIMIT);
    const refund = await post('/admin/refund', { event: 'api', feature: who, at }, true);
    expect(refund.status).toBe(200);
    expect(await admitted(who), 'admitted after the refund, on top of a full window').toBe(0);
  });
});
