// What an operator reads of the Memcached servers' clocks: a warning when this host's is far off.
import type { ClockSync } from '../store/memcached/clock-sync.js';
import type { DeferredLog } from './deferred-log.js';

/**
 * Records each server's clock offset, and warns when this host's clock is further from
 * the store's than the skew allowance (and says when it is back within): memgate counts
 * by the store's clock, so nothing is wrong with the limits, but the host's clock is.
 */
export function clockWatcher(
  log: DeferredLog,
  maxClockSkewMs: number,
  record: (server: string, offsetMs: number) => void,
) {
  const beyond = new Set<string>();
  return (server: string, { offsetMs, uncertaintyMs }: ClockSync) => {
    record(server, offsetMs);
    const rounded = Math.round(offsetMs);
    if (Math.abs(offsetMs) > maxClockSkewMs && !beyond.has(server)) {
      beyond.add(server);
      log.warn(
        { server, clockOffsetMs: rounded, uncertaintyMs: Math.round(uncertaintyMs), maxClockSkewMs },
        `this host's clock is ${Math.abs(rounded)} ms ${offsetMs > 0 ? 'behind' : 'ahead of'} Memcached ${server}'s, beyond MEMGATE_MAX_CLOCK_SKEW_MS: memgate counts by Memcached's clock, but check this host's time sync (NTP)`,
      );
    } else if (Math.abs(offsetMs) <= maxClockSkewMs && beyond.delete(server)) {
      log.info(
        { server, clockOffsetMs: rounded },
        `this host's clock is back within MEMGATE_MAX_CLOCK_SKEW_MS of Memcached ${server}'s`,
      );
    }
  };
}
