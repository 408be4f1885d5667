import { DEFAULTS } from '../config/defaults.js';
import type { CounterStore } from './counter-store.js';

export interface EvictionWatch {
  /** Looks once; tells of every server whose eviction count grew since the last look. */
  check(): Promise<void>;
  stop(): void;
}

/**
 * Watches a store's servers for evictions. Memcached evicts items when it runs out of
 * memory, and an evicted counter silently reads as lower: a limit is then enforced too
 * loosely. `onEvictions` hears of each server that evicted since the last look.
 */
export function watchEvictions(
  store: CounterStore,
  onEvictions: (server: string, evicted: number, total: number) => void,
  intervalMs: number = DEFAULTS.evictionWatchIntervalMs,
): EvictionWatch {
  const seen = new Map<string, number>();
  async function check(): Promise<void> {
    for (const { server, evictions } of await store.health()) {
      if (evictions === undefined) continue;
      const before = seen.get(server);
      // The first look only learns the baseline; a restarted server starts again from zero.
      if (before !== undefined && evictions > before) onEvictions(server, evictions - before, evictions);
      seen.set(server, evictions);
    }
  }
  const timer = setInterval(() => void check().catch(() => undefined), intervalMs);
  timer.unref();
  return {
    check,
    stop: () => {
      clearInterval(timer);
    },
  };
}
