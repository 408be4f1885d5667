import type { FastifyInstance } from 'fastify';
import { leavesClientsUncounted, type CounterStore, type ServerHealth } from '../../store/counter-store.js';
import type { Drain } from '../drain.js';
import { errorBody } from '../errors.js';
import { healthRoute, readinessRoute, upstreamHealthRoute } from '../schemas.js';

/**
 * /healthz: the process answers. /readyz: every client's counters answer too, on its own
 * server or the one it failed over to; each server is listed with whether it is up and
 * where its clients are, and a 503 names the down servers whose clients are not counted. While the service
 * drains, /readyz answers 503 at once, without asking the store, so that load balancers
 * send no more; /healthz still answers 200, so that nothing kills the draining process.
 * /healthcheck: envoyproxy/ratelimit's probe, with its answers, for deployments that keep it.
 */
export function registerHealthRoutes(
  app: FastifyInstance,
  { store, drain, policyVersion }: { store: CounterStore; drain: Drain; policyVersion?: (() => string) | undefined },
): void {
  app.get('/healthz', { schema: healthRoute }, () => ({ status: 'ok' }));
  app.get('/healthcheck', { schema: upstreamHealthRoute }, async (_request, reply) => {
    const ready = !drain.draining && !(await store.health()).some(leavesClientsUncounted);
    return ready ? reply.type('text/plain').send('OK') : reply.code(500).type('text/plain').send('');
  });
  app.get('/readyz', { schema: readinessRoute }, async (_request, reply) => {
    // Which policies this instance runs: instances on the same files answer the same.
    const policies = policyVersion ? { policyVersion: policyVersion() } : {};
    if (drain.draining) {
      return reply.code(503).send({
        status: 'draining',
        store: store.kind,
        ...policies,
        ...errorBody('draining', 'memgate is shutting down: send requests to another instance'),
      });
    }
    const servers = await store.health();
    const offset = store.clock ? medianClockOffset(servers) : 0;
    const clock = offset === undefined ? {} : { clockOffsetMs: offset };
    const down = servers.filter(leavesClientsUncounted);
    if (down.length === 0) return { status: 'ready', store: store.kind, ...policies, ...clock, servers };
    const message = down.map((server) => `${server.server}: ${server.error ?? 'down'}`).join('; ');
    return reply
      .code(503)
      .header('retry-after', '1')
      .send({
        status: 'unavailable',
        store: store.kind,
        ...policies,
        ...clock,
        servers,
        ...errorBody('store_unavailable', message),
      });
  });
}

/**
 * How far the time memgate counts by is from this host's clock: the median of the
 * servers' measured offsets (they agree when the servers' clocks do); undefined before
 * any was measured. A store without a clock of its own counts by this host's: 0.
 */
function medianClockOffset(servers: readonly ServerHealth[]): number | undefined {
  const offsets = servers
    .flatMap(({ clockOffsetMs }) => (clockOffsetMs === undefined ? [] : [clockOffsetMs]))
    .sort((a, b) => a - b);
  if (offsets.length === 0) return undefined;
  const middle = offsets.length >> 1;
  return offsets.length % 2 === 1
    ? offsets[middle]
    : Math.round(((offsets[middle - 1] as number) + (offsets[middle] as number)) / 2);
}
