// How a running service stops: the drain, then the listener, the connections, the usage
// history left, the store and the spans held, in that order, telling the operator how each went.
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { DEFAULTS } from './config/defaults.js';
import type { GrpcServer } from './grpc/server.js';
import type { Drain } from './http/drain.js';
import type { CounterStore } from './store/counter-store.js';
import type { OpenUsage } from './usage/open-usage.js';
import { logTracingDropped } from './operator-log/tracing-log.js';
import type { Tracing } from './tracing/tracing.js';

export interface Serving {
  readonly app: FastifyInstance;
  readonly grpc: GrpcServer | undefined;
  readonly store: CounterStore;
  readonly drain: Drain;
  readonly evictions: { stop(): void } | undefined;
  readonly logger: Logger;
  readonly usage: OpenUsage | undefined;
  readonly tracing: Tracing;
}

/** RunningService.close: the drain, then the listener, the connections and the store, in that order. */
export async function stopServing(
  { app, grpc, store, drain, evictions, logger, usage, tracing }: Serving,
  drainMs: number,
): Promise<void> {
  evictions?.stop();
  drain.begin(app.server);
  await sleep(drainMs);
  // gRPC refuses new calls now (Envoy's HTTP/2 connections get GOAWAY and move on) and
  // finishes those in flight while the HTTP listener closes.
  const grpcClosed = grpc?.close({ deadlineMs: DEFAULTS.grpcCloseMs }).then(({ forced }) => {
    if (forced) logger.warn(`gRPC calls still running ${DEFAULTS.grpcCloseMs} ms after the drain were cut`);
  });
  const listener = await drain.closeListener(app.server, {
    quietMs: DEFAULTS.shutdownQuietMs,
    maxWaitMs: DEFAULTS.shutdownQuietMaxMs,
  });
  const { allClosed, ...how } = listener;
  if (how.quiet) {
    logger.info(
      how,
      `stopped accepting connections, after ${how.waitedMs} ms with none new; finishing the requests on the ${how.openConnections} connections still open`,
    );
  } else {
    logger.warn(
      how,
      `stopped accepting connections while they kept arriving for ${how.waitedMs} ms after the drain: clients still connecting may see resets (is a load balancer still sending here?)`,
    );
  }
  await allClosed;
  await grpcClosed;
  logger.info('every connection has closed; writing the usage history left and closing the stores');
  await app.close();
  // After the last request: every decision made is in what the recorder writes now.
  await usage?.close().catch((err: unknown) => {
    logger.error({ err }, 'writing the last usage history failed; it is lost');
  });
  await store.close();
  // Last: the spans of the last requests and store calls.
  if (!(await tracing.close())) logTracingDropped(logger, DEFAULTS.tracingFlushMs);
}
