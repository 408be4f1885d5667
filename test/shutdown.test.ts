// SIGTERM under a keep-alive load loses no request: the real process, a real memcached,
// and a client that classifies every request it writes (test/helpers/keep-alive-load.ts).
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { keepAliveLoad, openConnection, type LoadResult, type Outcome } from './helpers/keep-alive-load.js';
import { useMemcached } from './helpers/memcached.js';
import { startServiceProcess, type ServiceProcess } from './helpers/service-process.js';

const DRAIN_MS = 400;
const CONNECTIONS = 50;
const ROUNDS = 10;
const memcached = useMemcached();

async function logLine(service: ServiceProcess, start: string): Promise<Record<string, unknown>> {
  for (;;) {
    const found = service.logs.find((l) => typeof l.msg === 'string' && l.msg.startsWith(start));
    if (found) return found;
    await sleep(5);
  }
}

/** Resolves once the service's /metrics counts at least `count` decisions. */
async function decisionsReach(service: ServiceProcess, count: number): Promise<void> {
  for (;;) {
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    const decided = [...metrics.matchAll(/^memgate_decisions_total\{[^}]*\} (\d+)$/gm)].reduce(
      (sum, [, n]) => sum + Number(n),
      0,
    );
    if (decided >= count) return;
    await sleep(20);
  }
}

const startRound = (env: Record<string, string>) =>
  startServiceProcess({ MEMGATE_SHUTDOWN_DRAIN_MS: String(DRAIN_MS), ...env });

/** One service (startRound) taken through SIGTERM under load: what the load saw, and what the process said and did. */
async function roundThroughSigterm(service: ServiceProcess) {
  const load = keepAliveLoad({
    port: service.port,
    connections: CONNECTIONS,
    path: (n) => `/check?event=url_shorten&feature=client-${n % 500}`,
    until: service.exit,
  });
  // Let the load settle into its keep-alive connections first: a fixed pause was too short
  // on a loaded machine, so wait for the service to have decided a few rounds of them.
  await decisionsReach(service, 3 * CONNECTIONS);
  service.child.kill('SIGTERM');
  await logLine(service, 'draining for');
  const ready = await fetch(`${service.url}/readyz`);
  const health = await fetch(`${service.url}/healthz`);
  const readiness = { status: ready.status, connection: ready.headers.get('connection'), body: await ready.json() };
  const code = await service.exit;
  return { load: await load, readiness, health: health.status, code, logs: service.logs, stderr: service.stderr() };
}

function report(round: string, load: LoadResult): string {
  const losses = load.writtenWithoutResponse ? ` (${JSON.stringify(load.losses)})` : '';
  return (
    `${round}: answered ${load.answered} (${load.closeAnswers} with connection: close), refused at connect ${load.refusedAtConnect}, ` +
    `written without response ${load.writtenWithoutResponse}${losses}; connections opened ${load.connectionsOpened}; statuses ${JSON.stringify(load.statuses)}`
  );
}

/** Everything a round must show besides losing nothing. */
function expectCleanShutdown({
  load,
  readiness,
  health,
  code,
  logs,
  stderr,
}: Awaited<ReturnType<typeof roundThroughSigterm>>): void {
  expect(code, stderr).toBe(0);
  // A keep-alive load before the signal; answers that closed their connections after it.
  expect(load.answered - load.closeAnswers).toBeGreaterThan(CONNECTIONS);
  expect(load.closeAnswers).toBeGreaterThan(0);
  expect(Object.keys(load.statuses).filter((status) => status !== '200' && status !== '429')).toEqual([]);
  expect(load.otherConnectErrors).toEqual({});
  expect(readiness).toEqual({
    status: 503,
    connection: 'close',
    body: {
      status: 'draining',
      store: expect.any(String) as string,
      policyVersion: expect.stringMatching(/^[0-9a-f]{12}$/) as string,
      error: { code: 'draining', message: expect.any(String) as string },
    },
  });
  expect(health).toBe(200);
  // The log tells the sequence, in order, and the drain lasted as long as it was told to.
  const steps = [/^draining for /, /^stopped accepting connections/, /^every connection has closed/, /^stopped$/];
  const lines = steps.map((step) => logs.findIndex((l) => typeof l.msg === 'string' && step.test(l.msg)));
  expect(
    lines.every((line, i) => line >= 0 && (i === 0 || line > (lines[i - 1] ?? 0))),
    JSON.stringify(logs),
  ).toBe(true);
  const [drained, listenerClosed] = [logs[lines[0] ?? 0], logs[lines[1] ?? 0]];
  expect(drained).toMatchObject({ signal: 'SIGTERM', drainMs: DRAIN_MS });
  expect(listenerClosed).toMatchObject({ quiet: true });
  expect((listenerClosed?.time as number) - (drained?.time as number)).toBeGreaterThanOrEqual(DRAIN_MS);
}

describe('SIGTERM under a keep-alive load', () => {
  it(`loses no request: ${ROUNDS} rounds on Memcached`, { timeout: 180_000 }, async () => {
    const losses: number[] = [];
    const env = { MEMCACHED_SERVERS: memcached().servers };
    // Each round's service starts while the round before runs (a node start and a clock synchronization,
    // seconds on a busy host, most of it waiting): its own process and keys, idle until its round.
    let next: Promise<ServiceProcess> | undefined = startRound(env);
    try {
      for (let round = 1; round <= ROUNDS; round++) {
        const service: ServiceProcess = await (next as Promise<ServiceProcess>);
        next = round < ROUNDS ? startRound(env) : undefined;
        const result = await roundThroughSigterm(service);
        // eslint-disable-next-line no-console -- the per-round numbers are quoted in docs/operations.md
        console.log(report(`memcached round ${round}`, result.load));
        expectCleanShutdown(result);
        losses.push(result.load.writtenWithoutResponse);
      }
    } finally {
      // A round that failed leaves the next round's service started: stopped here.
      await next?.then((service) => service.stop()).catch(() => undefined);
    }
    expect(losses).toEqual(losses.map(() => 0));
  });

  it('loses no request on the embedded store', { timeout: 60_000 }, async () => {
    const result = await roundThroughSigterm(await startRound({}));
    // eslint-disable-next-line no-console -- as above
    console.log(report('embedded', result.load));
    expectCleanShutdown(result);
    expect(result.load.writtenWithoutResponse).toBe(0);
  });

  it('answers once, then closes, a keep-alive connection idle since before the signal; closes one that stays idle after the drain', async () => {
    const service = await startServiceProcess({ MEMGATE_SHUTDOWN_DRAIN_MS: String(DRAIN_MS) });
    const [speaks, silent] = await Promise.all([
      openConnection(service.port, '127.0.0.1'),
      openConnection(service.port, '127.0.0.1'),
    ]);
    if (typeof speaks === 'string' || typeof silent === 'string') throw new Error('could not connect to the service');
    const connectionOf = (outcome: Outcome) =>
      'answer' in outcome ? [outcome.answer.status, outcome.answer.headers.get('connection')] : [outcome.lost];
    for (const connection of [speaks, silent])
      expect(connectionOf(await connection.request('/healthz'))).toEqual([200, 'keep-alive']);
    service.child.kill('SIGTERM');
    const drained = await logLine(service, 'draining for');
    expect(connectionOf(await speaks.request('/check?event=login&feature=idle'))).toEqual([200, 'close']);
    await speaks.whenClosed;
    await silent.whenClosed;
    const silentClosedAt = Date.now();
    expect(await service.exit).toBe(0);
    // Not at the signal: only once the drain was over.
    expect(silentClosedAt).toBeGreaterThanOrEqual((drained.time as number) + DRAIN_MS);
  });
});
