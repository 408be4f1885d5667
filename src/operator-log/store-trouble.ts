// What an operator reads of the store's trouble: a server going down and coming back, its
// clients moving to other servers and back, and checks decided without the store, each told
// once per change rather than once per failed check.
import { ENVOY_EVENT_PREFIX } from '../config/envoy-match.js';
import type { PolicySet } from '../config/policies.js';
import type { StoreUnavailableError } from '../store/counter-store.js';
import type { PlacementChange } from '../store/memcached/placement.js';
import type { DeferredLog } from './deferred-log.js';

/** What checks of unreachable servers' clients get, per each event's onStoreError, in words. */
function degradedChecks(policies: PolicySet, servers: 'one' | 'several'): string {
  const byRule = { allow: [] as string[], deny: [] as string[] };
  const envoyByRule = { allow: 0, deny: 0 };
  for (const { event, onStoreError } of policies.events.values()) {
    if (event.startsWith(ENVOY_EVENT_PREFIX)) envoyByRule[onStoreError]++;
    else byRule[onStoreError].push(event);
  }
  // An Envoy configuration may hold hundreds of limits: they are counted, not named.
  for (const rule of ['allow', 'deny'] as const) {
    const count = envoyByRule[rule];
    if (count > 0) byRule[rule].push(`${count} Envoy limit${count === 1 ? '' : 's'}`);
  }
  const verb = (events: string[]) =>
    events.length === 1 && !/^\d+ Envoy limits$/.test(events[0] ?? '') ? 'is' : 'are';
  const parts = [
    ...(byRule.allow.length > 0
      ? [`${byRule.allow.join(', ')} ${verb(byRule.allow)} allowed, marked "degraded" (onStoreError: allow)`]
      : []),
    ...(byRule.deny.length > 0
      ? [`${byRule.deny.join(', ')} ${verb(byRule.deny)} denied with 429 and retry-after: 1 (onStoreError: deny)`]
      : []),
  ];
  return `checks of the clients ${servers === 'one' ? 'it holds' : 'they hold'} are decided without the store: ${parts.join('; ')}`;
}

/**
 * Logs store trouble once per change: a server going down and coming back (with how many
 * checks were decided without the store meanwhile), its clients moving to other servers
 * and back, rather than every failed check. The servers that do not answer while the
 * service starts make one warning after the start-up line. A failed check no down server
 * explains is logged at most every 5 s.
 */
export function storeTroubleLogger(
  log: DeferredLog,
  policies: () => PolicySet,
  failover: { readonly settleMs: number; readonly confirmMs: number | undefined },
) {
  const down = new Map<string, { since: number; reason: string }>();
  /** Servers whose clients are counted elsewhere, and where: their going down and coming back are told by placement's lines. */
  const away = new Map<string, readonly string[]>();
  /** Down servers whose line waits: their clients may yet fail over once another server has answered. */
  const waiting = new Map<string, NodeJS.Timeout>();
  /** Down servers whose "is down" line was written: their "answers again" line follows. */
  const told = new Set<string>();
  let starting = true;
  let degraded = 0;
  let unexplainedAt = -Infinity;
  let unexplained = 0;
  const tellDown = (server: string, reason: string) => {
    told.add(server);
    log.warn(
      { server, reason },
      `Memcached ${server} is down (${reason}): until it answers, /readyz answers 503 and ${degradedChecks(policies(), 'one')}`,
    );
  };
  const stopWaiting = (server: string) => {
    clearTimeout(waiting.get(server));
    waiting.delete(server);
  };
  return {
    onServerState: (server: string, { up, reason = 'no reason' }: { up: boolean; reason?: string }): void => {
      if (!up) {
        down.set(server, { since: Date.now(), reason });
        if (starting || away.has(server)) return;
        const { confirmMs } = failover;
        if (confirmMs === undefined) tellDown(server, reason);
        else
          waiting.set(
            server,
            setTimeout(() => {
              waiting.delete(server);
              if (down.has(server) && !away.has(server)) tellDown(server, reason);
            }, confirmMs).unref(),
          );
        return;
      }
      stopWaiting(server);
      const was = down.get(server);
      down.delete(server);
      if (starting || !was || away.has(server) || !told.delete(server)) return;
      log.info(
        { server, downMs: Date.now() - was.since, degradedChecks: degraded },
        `Memcached ${server} answers again, after ${Date.now() - was.since} ms; ${degraded} checks were decided without the store meanwhile`,
      );
      degraded = 0;
    },
    onPlacementChange: (change: PlacementChange): void => {
      const { server } = change;
      if (change.kind === 'left') {
        away.set(server, change.to);
        told.delete(server);
        stopWaiting(server);
        if (starting) return;
        log.warn(
          { server, reason: change.reason, failedOverTo: change.to, holdDownMs: change.holdDownMs },
          `Memcached ${server} is down (${change.reason}): its clients are counted on ${change.to.join(', ')} from now on, from zero there; they move back once it has answered for ${seconds(failover.settleMs)}, no sooner than ${seconds(change.holdDownMs)} from now`,
        );
      } else if (change.kind === 'answering') {
        if (starting) return;
        log.info(
          { server, returnsInMs: change.returnsInMs },
          `Memcached ${server} answers again: its clients move back to it in ${seconds(change.returnsInMs)} if it keeps answering`,
        );
      } else if (change.kind === 'unsettled') {
        if (starting) return;
        log.warn(
          { server, reason: change.reason },
          `Memcached ${server} stopped answering again (${change.reason}) before its clients moved back: they stay where they are, and its settle starts over when it answers`,
        );
      } else {
        away.delete(server);
        // Every server is down: its clients are on it again, and decided without the store until it answers.
        if (change.whileDown === true) {
          const was = down.get(server);
          if (!starting && was) tellDown(server, was.reason);
          return;
        }
        // Back at once as it answers (no other server answered): the "answers again" line that follows says it.
        if (starting || down.has(server)) return;
        log.info(
          { server, awayMs: change.awayMs },
          `Memcached ${server}'s clients are counted on it again, after ${seconds(change.awayMs)} away`,
        );
      }
    },
    onStoreUnavailable: (err: StoreUnavailableError, event: string): void => {
      // Explained by a down server whose clients are not counted elsewhere: its "answers again" line tells how many.
      if ([...down.keys()].some((server) => !away.has(server))) {
        degraded++;
        return;
      }
      unexplained++;
      const now = Date.now();
      if (now - unexplainedAt < 5000) return;
      log.warn(
        { error: err.message, event, degradedChecks: unexplained },
        `Memcached could not answer (${err.message}): checks are decided by each event's onStoreError rule`,
      );
      unexplainedAt = now;
      unexplained = 0;
    },
    /** The start-up line is out: say which of `servers` did not answer while starting, in one line. */
    started: (servers: readonly string[]): void => {
      starting = false;
      const silent = servers.filter((server) => down.has(server) && !away.has(server));
      const moved = servers.filter((server) => away.has(server));
      if (moved.length > 0) {
        const movedReasons = moved.map((server) => down.get(server)?.reason ?? 'no reason');
        log.warn(
          { servers: moved, reasons: movedReasons, failedOverTo: moved.map((server) => away.get(server)) },
          `Memcached ${moved.map((server, i) => `${server} (${movedReasons[i] ?? ''})`).join(', ')} cannot be reached: memgate serves anyway; ${moved.length === 1 ? 'its' : 'their'} clients are counted on ${[...new Set(moved.flatMap((server) => away.get(server) ?? []))].join(', ')} until ${moved.length === 1 ? 'it has' : 'they have'} answered for ${seconds(failover.settleMs)}`,
        );
      }
      if (silent.length === 0) return;
      for (const server of silent) told.add(server);
      const reasons = silent.map((server) => down.get(server)?.reason ?? 'no reason');
      log.warn(
        { servers: silent, reasons },
        `Memcached ${silent.map((server, i) => `${server} (${reasons[i] ?? ''})`).join(', ')} cannot be reached: memgate serves anyway; until ${silent.length === 1 ? 'it answers' : 'they answer'}, /readyz answers 503 and ${degradedChecks(policies(), silent.length === 1 ? 'one' : 'several')}`,
      );
    },
  };
}

/** "1.5 s", "30 s". */
function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

export type StoreTroubleLog = ReturnType<typeof storeTroubleLogger>;
