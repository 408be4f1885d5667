/**
 * Keeping a test's calls in one fixed window. memgate's windows turn by its store's clock (within
 * about a second of this host's, see src/store/memcached/clock-sync.ts), so a test that counts up to a
 * limit starts away from a window's edges, and one that ran into the edge may be run again.
 */

/** A unit's length in seconds, as Envoy's and upstream's limits name them. */
export const UNIT_SECONDS = { SECOND: 1, MINUTE: 60, HOUR: 3600, DAY: 86_400 } as const;

/** How far this host's clock and memgate's may be apart, and so how near an edge is too near. */
const EDGE_MS = 1500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const windowOf = (unitSeconds: number, atMs: number) => Math.floor(atMs / (unitSeconds * 1000));

/**
 * Waits until the current window of `unitSeconds` has run 1.5 s and has `neededMs` left (at most a
 * quarter of the window), or the next one has: a busy CI host takes seconds for a test's few calls.
 */
export async function awayFromWindowEnd(unitSeconds: number, neededMs = 10_000): Promise<void> {
  const lengthMs = unitSeconds * 1000;
  const into = Date.now() % lengthMs;
  if (into < EDGE_MS) await sleep(EDGE_MS - into);
  else if (lengthMs - into < Math.min(neededMs, lengthMs / 4)) await sleep(lengthMs - into + EDGE_MS);
}

/**
 * Runs `attempt` away from a window's end; when it fails having reached the window's last 1.5 s,
 * where memgate's window may have turned under it, runs it once more. A failure well inside one window
 * is the test's own and is thrown. `attempt` must start afresh each time (its own service or keys).
 */
export async function inOneWindow(unitSeconds: number, attempt: () => Promise<void>, neededMs?: number): Promise<void> {
  for (let run = 1; ; run++) {
    await awayFromWindowEnd(unitSeconds, neededMs);
    const window = windowOf(unitSeconds, Date.now());
    try {
      await attempt();
      return;
    } catch (error) {
      if (run === 2 || windowOf(unitSeconds, Date.now() + EDGE_MS) === window) throw error;
    }
  }
}
