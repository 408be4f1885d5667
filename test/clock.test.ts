// Two service processes on one real memcached, one of them with its clock moved by
// libfaketime: they count by memcached's clock, so together they admit no more than the
// limit in any window, and each reports how far its own clock is from the store's.
import { access, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';
import { startServiceProcess, type ServiceProcess } from './helpers/service-process.js';

/** Debian's libfaketime (apt-get install -y libfaketime): moves a process's wall clock. */
const LIBFAKETIME = process.env.LIBFAKETIME_PATH ?? '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
const LIMIT = 12;
const WINDOW_S = 6;

// A memcached of its own: the run's shared one keeps the time its instances agreed on,
// generation after generation, which can wander from this host's clock; the first
// assertion below is about a clock named from the server's own seconds.
const memcached = useMemcached({ own: true });
let config = '';
const services: ServiceProcess[] = [];
beforeAll(async () => {
  await access(LIBFAKETIME); // CI installs it; say so plainly when it is missing
  const dir = await mkdtemp(join(tmpdir(), 'memgate-clock-'));
  config = join(dir, 'policies.yaml');
  await writeFile(config, `events:\n  api:\n    limits:\n      - { limit: ${LIMIT}, window: ${WINDOW_S}s }\n`);
});
afterAll(async () => {
  await Promise.all(services.map((service) => service.stop()));
});

async function instance(prefix: string, fake?: string): Promise<ServiceProcess> {
  const env: Record<string, string> = {
    MEMCACHED_SERVERS: memcached().servers,
    MEMGATE_CONFIG: config,
    MEMGATE_KEY_PREFIX: prefix,
  };
  // Only the wall clock moves: Node's timers run on the monotonic clock.
  if (fake) Object.assign(env, { LD_PRELOAD: LIBFAKETIME, FAKETIME: fake, FAKETIME_DONT_FAKE_MONOTONIC: '1' });
  const service = await startServiceProcess(env);
  services.push(service);
  return service;
}

/** The most admitted requests any `spanMs` of the run held, by this test's clock. */
function mostAdmittedWithin(admittedAt: readonly number[], spanMs: number): number {
  let most = 0;
  for (let first = 0, last = 0; last < admittedAt.length; last++) {
    while ((admittedAt[last] as number) - (admittedAt[first] as number) >= spanMs) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

interface Readiness {
  clockOffsetMs: number;
  servers: { clockOffsetMs?: number }[];
}

describe.each([
  ['5 s ahead', '+5s', -5000],
  ['3 min behind', '-3m', 180_000],
])('a second instance whose clock is %s', (_name, fake, expectedOffsetMs) => {
  it(
    'admits, with the first, at most the limit in any window, and reports its clock offset',
    { timeout: 60_000 },
    async () => {
      const prefix = `clock${String(expectedOffsetMs).replace('-', 'm')}${uniquePrefix()}`;
      const [right, skewed] = await Promise.all([instance(prefix), instance(prefix, fake)]);
      // Both report the store's clock against their own. Memcached keeps whole seconds from
      // its start, so its clock is up to a second off even this host's; the two instances'
      // offsets differ by exactly what libfaketime moved.
      const readiness = async (service: ServiceProcess) =>
        (await fetch(`${service.url}/readyz`)).json() as Promise<Readiness>;
      const [rightReadiness, skewedReadiness] = await Promise.all([readiness(right), readiness(skewed)]);
      expect(Math.abs(rightReadiness.clockOffsetMs)).toBeLessThan(1100);
      expect(Math.abs(skewedReadiness.clockOffsetMs - rightReadiness.clockOffsetMs - expectedOffsetMs)).toBeLessThan(
        100,
      );
      expect(skewedReadiness.servers[0]?.clockOffsetMs).toBe(skewedReadiness.clockOffsetMs);
      expect(await (await fetch(`${skewed.url}/metrics`)).text()).toMatch(
        /memgate_clock_offset_seconds\{server="[^"]+"\} -?\d/,
      );
      expect(
        skewed.logs.some(
          (line) => typeof line.msg === 'string' && line.msg.includes('beyond MEMGATE_MAX_CLOCK_SKEW_MS'),
        ),
      ).toBe(true);

      // One client, its requests spread over both instances for longer than a window.
      const admittedAt: number[] = [];
      const started = performance.now();
      for (let tick = 0; performance.now() - started < (WINDOW_S + 3) * 1000; tick++) {
        const answers = await Promise.all(
          [right, skewed, right, skewed].map(async (service) => {
            const at = performance.now();
            const response = await fetch(`${service.url}/check?event=api&feature=one-client`);
            const decision = (await response.json()) as { allowed: boolean; degraded?: boolean };
            expect(decision.degraded).toBeUndefined();
            return decision.allowed ? at : undefined;
          }),
        );
        for (const at of answers) if (at !== undefined) admittedAt.push(at);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      admittedAt.sort((a, b) => a - b);
      // Instances agree on time within a second: no window a second shorter than the limit's holds more.
      expect(mostAdmittedWithin(admittedAt, (WINDOW_S - 1) * 1000)).toBeLessThanOrEqual(LIMIT);
      // Both kept admitting as the window moved on: the limit was reached, not undershot.
      expect(admittedAt.length).toBeGreaterThanOrEqual(2 * LIMIT - 2);
    },
  );
});
