// Hostile tests of quota leases through memgate/client, against a real memgate process on a
// real memcached that is frozen (SIGSTOP) under traffic, and a caller whose wall clock steps
// back while its event loop is busy. Leases must neither burn quota nobody holds nor spend
// units after their life.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createClient } from '../src/client/index.js';
import { startMemcachedProcess, uniquePrefix, type MemcachedProcess } from './helpers/memcached.js';
import { startServiceProcess, type ServiceProcess } from './helpers/service-process.js';

const POLICIES = `events:
  stalled:
    limits:
      - { limit: 1000, window: 1m }
    lease: { maxUnits: 50, life: 2s }
  jumpy:
    limits:
      - { limit: 4, window: 4s }
    lease: { maxUnits: 4, life: 1s }
`;

let memcached: MemcachedProcess;
let memgate: ServiceProcess;
beforeAll(async () => {
  memcached = await startMemcachedProcess();
  const folder = mkdtempSync(join(tmpdir(), 'memgate-hostile-leases-'));
  writeFileSync(join(folder, 'policies.yaml'), POLICIES);
  memgate = await startServiceProcess({
    MEMCACHED_SERVERS: memcached.servers,
    MEMCACHED_TIMEOUT_MS: '100',
    MEMGATE_CONFIG: join(folder, 'policies.yaml'),
    MEMGATE_KEY_PREFIX: uniquePrefix(),
  });
});
afterAll(async () => {
  memcached.process.kill('SIGCONT');
  await memgate.stop();
  await memcached.stop();
});

async function peekRemaining(event: string, feature: string): Promise<number> {
  const response = await fetch(`${memgate.url}/peek`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ event, feature }),
  });
  const decision = (await response.json()) as { limits: { remaining: number }[]; degraded?: true };
  expect(decision.degraded).toBeUndefined();
  return decision.limits[0]?.remaining ?? Number.NaN;
}

describe('leases through a hostile world', () => {
  it('a Memcached stall does not burn a lease of units per degraded check', async () => {
    const client = createClient({ url: memgate.url, leaseUnits: 50, timeoutMs: 2000 });
    const who = 'stall-1';
    try {
      await memcached.pause();
      let degraded = 0;
      for (let i = 0; i < 5; i++) {
        const decision = await client.check('stalled', who);
        expect(decision.allowed).toBe(true);
        if (decision.degraded) degraded++;
      }
      expect(degraded).toBe(5);
    } finally {
      memcached.process.kill('SIGCONT');
    }
    // The frozen server applies what it was sent when it wakes.
    await sleep(500);
    const counted = 1000 - (await peekRemaining('stalled', who));
    // Degraded allows may stay counted (one unit each); no lease was granted, so none of its units.
    expect(counted).toBeLessThanOrEqual(5);
    await client.close();
  });

  it('a lease is not spent after its life when the wall clock steps back while the caller is busy', async () => {
    // A deadline a loaded host meets: the first check must take its lease, not fall back.
    const client = createClient({ url: memgate.url, leaseUnits: 4, timeoutMs: 5000 });
    const who = 'jumpy-1';
    try {
      const first = await client.check('jumpy', who);
      expect(first.allowed).toBe(true);
      expect(client.stats.leasesTaken).toBe(1);
      // NTP steps the clock back an hour, and the caller's event loop is busy past the window.
      const realNow = Date.now.bind(Date);
      const stepped = vi.spyOn(Date, 'now').mockImplementation(() => realNow() - 3_600_000);
      const busyUntil = performance.now() + 4_500;
      while (performance.now() < busyUntil) {
        // busy: no timer runs
      }
      // The first checks after it, made before any timer can run.
      const local = [client.check('jumpy', who), client.check('jumpy', who), client.check('jumpy', who)];
      stepped.mockRestore();
      const localAllowed = (await Promise.all(local)).filter((decision) => decision.allowed).length;
      let serverAllowed = 0;
      for (let i = 0; i < 4; i++) {
        const response = await fetch(`${memgate.url}/check`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ event: 'jumpy', feature: who }),
        });
        if (response.status === 200) serverAllowed++;
      }
      // Everything above happened well within one 4 s window.
      expect(
        localAllowed + serverAllowed,
        `${localAllowed} by the client, ${serverAllowed} by memgate`,
      ).toBeLessThanOrEqual(4);
    } finally {
      await client.close();
    }
  });
});
