import pLimit from 'p-limit';
import { DEFAULTS } from '../../config/defaults.js';
import {
  StoreMovedError,
  StoreOverloadedError,
  StoreUnavailableError,
  swapArgumentError,
  type CounterDecrement,
  type CounterIncrement,
  type CounterSet,
  type CounterStore,
  type IncrementAndReadResult,
  type IncrementOptions,
  type ServerHealth,
  type StoreVersion,
  type VersionedValue,
} from '../counter-store.js';
import { runBatch, type BatchOptions, type BatchReplies } from './batch.js';
import { deleteKey, readVersioned, removeCounter, setCounter, swapCounter } from './command.js';
import { syncClock, type ClockSync, type SyncedClock } from './clock-sync.js';
import { ServerConnection } from './connection.js';
import { serverStats } from './stats.js';
import type { BatchRequest } from './protocol.js';
import { Placement, type PlacementChange } from './placement.js';
import { parseServerList, type Credentials, type MemcachedTls } from './servers.js';

/** Where the store warns of a server it cannot reach: console and pino loggers are ones. */
export interface StoreLogger {
  warn(message: string): void;
}

export interface MemcachedStoreOptions {
  /** `host[:port],…`, as in MEMCACHED_SERVERS. */
  readonly servers: string;
  /** SASL credentials for the servers that name none of their own. */
  readonly credentials?: Credentials;
  /** TLS to every server; in clear when unset. */
  readonly tls?: MemcachedTls | undefined;
  /** Deadline of every call to a server, in milliseconds. Default 250. */
  readonly timeoutMs?: number;
  /** Most servers one call talks to at once. Default 8. */
  readonly maxParallelServers?: number;
  /** Send the calls made in one turn of the event loop in one socket write. Default true. */
  readonly coalesceWrites?: boolean;
  /** Most checks waiting on Memcached at once; more are refused with StoreOverloadedError. Default 1000. */
  readonly maxInFlight?: number;
  /**
   * Up to this many whole seconds added at random to the life of each counter an increment
   * creates, so that keys made together expire apart (MEMCACHED_EXPIRATION_JITTER_S). Default 0: none.
   */
  readonly expirationJitterS?: number;
  /** Told of every call's kind, duration and outcome, for metrics. */
  readonly onOperation?: (operation: StoreOperation, seconds: number, outcome: StoreOperationOutcome) => void;
  /**
   * Move a down server's clients to the next server on the ring while another answers, and
   * back once it has answered for `failoverSettleMs` (see placement.ts). Default true.
   */
  readonly failover?: boolean;
  /** Least time a server stays out of placement once its clients moved. Default 30 s. */
  readonly failoverHoldDownMs?: number;
  /** How long a server must answer without a break before its clients move back. Default 10 s. */
  readonly failoverSettleMs?: number;
  /**
   * Told once per outage, in one line, that a server cannot be reached and what checks get
   * meanwhile; anything with `warn(message)` (console, pino). Default console; false says
   * nothing (the service writes its own lines: operator-log/store-trouble.ts).
   */
  readonly logger?: StoreLogger | false | undefined;
  /** Told when a server goes down (with the reason) and when it answers again. */
  readonly onServerState?: (server: string, state: { up: boolean; reason?: string }) => void;
  /** Told when a server's clients move away, when it answers again while away, and when they move back. Before onServerState. */
  readonly onPlacementChange?: (change: PlacementChange) => void;
  /** Told of each check placed on another server than its home, while a server is out of placement. */
  readonly onPlacedAway?: (home: string, placed: string) => void;
  /** Told of increments taken back after their check was decided without the store. */
  readonly onUndo?: (undone: number, error?: unknown) => void;
  /** Told after each reading of a server's clock (see clock-sync.ts). */
  readonly onClockSync?: (server: string, sync: ClockSync) => void;
}

/** How often a failed-over server that answers again is asked while it settles. */
const SETTLE_PROBE_MS = 200;
/** What a server's health reads of its statistics: counters it dropped to make room. */
const HEALTH_STATS = ['evictions'];
const NO_OP: BatchRequest = { increments: [], decrements: [], reads: [] };
/** The bits of a version that are Memcached's CAS unique; above them, the server's tag. */
const CAS_BITS = 2n ** 64n - 1n;

export type StoreOperation = 'incrementAndRead' | 'decrement' | 'reset' | 'readVersioned' | 'swap' | 'remove';
/** How a call ended: answered, failed or past its deadline, or shed before it was sent. */
export type StoreOperationOutcome = 'ok' | 'unavailable' | 'overloaded';

/** The part of one call that goes to one server, with where each answer belongs in the call. */
interface ServerShare {
  readonly increments: CounterIncrement[];
  readonly incrementPositions: number[];
  readonly decrements: CounterDecrement[];
  readonly reads: string[];
  readonly readPositions: number[];
}

/**
 * Counters in a Memcached cluster shared by every memgate instance. Keys route by hash
 * tag, so one check's keys sit on one server and the check is one write and one round trip.
 */
export function createMemcachedStore(options: MemcachedStoreOptions): CounterStore {
  const expirationJitterS = options.expirationJitterS ?? DEFAULTS.memcachedExpirationJitterS;
  // Before any connection opens. A negative draw could shorten a TTL to 0, which Memcached reads as "never expires".
  if (!Number.isInteger(expirationJitterS) || expirationJitterS < 0)
    throw new RangeError(`expirationJitterS must be a whole number of seconds from 0, not ${expirationJitterS}`);
  const endpoints = parseServerList(options.servers, options.credentials);
  const timeoutMs = options.timeoutMs ?? DEFAULTS.memcachedTimeoutMs;
  const coalesceWrites = options.coalesceWrites ?? true;
  const placement = new Placement({
    servers: endpoints.map((endpoint) => endpoint.label),
    failover: options.failover ?? DEFAULTS.memcachedFailover,
    holdDownMs: options.failoverHoldDownMs ?? DEFAULTS.memcachedFailoverHoldDownMs,
    settleMs: options.failoverSettleMs ?? DEFAULTS.memcachedFailoverSettleMs,
    heardAt: (index) => servers[index]?.heardAt ?? 0,
    freshMs: timeoutMs / 2,
    onUnsure: (candidates) => {
      if (confirming) return;
      // Settled when one answers (and the down server has left) or none did: the calls that failed meanwhile wait for it.
      confirming = new Promise<void>((resolve) => {
        let unanswered = candidates.length;
        let settled = false;
        const done = () => {
          if (settled) return;
          settled = true;
          confirming = undefined;
          resolve();
        };
        for (const index of candidates)
          ask(
            index,
            () => {
              placement.recheck();
              done();
            },
            () => {
              if (--unanswered === 0) done();
            },
          );
      });
    },
    onChange: (change) => {
      if (change.kind === 'answering')
        watchSettling(endpoints.findIndex((endpoint) => endpoint.label === change.server));
      options.onPlacementChange?.(change);
    },
  });
  let closed = false;
  /** While a down server waits for another to answer before it leaves (see onUnsure). */
  let confirming: Promise<void> | undefined;
  /** Servers a no-op is on its way to. */
  const asking = new Set<number>();
  /**
   * Sends a no-op to a server, one at a time, then `answered` or `failed`. A server that does
   * not answer is marked down by its connection.
   */
  function ask(index: number, answered: () => void, failed: () => void = () => undefined): void {
    const server = servers[index];
    if (closed || !server || asking.has(index)) {
      failed();
      return;
    }
    asking.add(index);
    runBatch(server, NO_OP).then(
      () => {
        asking.delete(index);
        answered();
      },
      () => {
        asking.delete(index);
        failed();
      },
    );
  }
  /**
   * A failed-over server that answers again is asked every SETTLE_PROBE_MS until its clients
   * move back: settling must see it answer, and nothing else is sent to it meanwhile.
   */
  function watchSettling(index: number): void {
    const next = () => {
      if (closed || placement.isPlaced(index) || servers[index]?.down !== undefined) return;
      setTimeout(() => {
        ask(index, next);
      }, SETTLE_PROBE_MS).unref();
    };
    next();
  }
  const warnDown = outageWarning(options.logger ?? console, endpoints.length);
  const servers = endpoints.map(
    ({ host, port, username, password, label }, index) =>
      new ServerConnection({
        host,
        port,
        username,
        password,
        label,
        tls: options.tls,
        deadlineMs: timeoutMs,
        coalesceWrites,
        // Placement first: the calls this change fails are sent again where their keys now go.
        onStateChange: (state) => {
          if (state.up) placement.up(index);
          else placement.down(index, state.reason ?? 'no reason');
          warnDown(label, state);
          options.onServerState?.(label, state);
        },
      }),
  );
  const serverOf = (key: string): number => placement.serverOf(key);
  /**
   * Per server, made once (a check's call is the hot path): a call that failed because its
   * server left placement fails with StoreMovedError (see runOn).
   */
  const movedOnFailure = servers.map(
    (server, index) =>
      (error: unknown): Promise<never> =>
        afterMove(index, error, () =>
          Promise.reject(
            new StoreMovedError(`memcached ${server.label} failed; its clients are counted on another server now`),
          ),
        ),
  );
  const { onPlacedAway } = options;
  /** The server of a check's key, telling onPlacedAway when it is not the key's home. */
  const serverOfCheck = (key: string): number => {
    const index = placement.serverOf(key);
    if (onPlacedAway && placement.anyAway) {
      const home = placement.homeOf(key);
      if (home !== index) onPlacedAway(endpoints[home]?.label ?? '', endpoints[index]?.label ?? '');
    }
    return index;
  };
  // Bucket time is the clock of the server holding the buckets, which every instance reads.
  const clocks = servers.map((server) =>
    syncClock(server, { onSync: (sync) => options.onClockSync?.(server.label, sync) }),
  );
  const clockOf = (index: number) => clocks[index] as SyncedClock;
  // Built once each: a batch is the hot path, and objects of one shape keep it fast.
  const nowOf = clocks.map((clock) => () => clock.now());
  const { onUndo } = options;
  // Jitter lengthens only the counters increments create: a longer life never changes a
  // decision, as memgate reads only the buckets of its windows (and judges a record's hold by
  // the time in its id). Not swap's keys (a concurrency slot is held exactly as long as its
  // TTL) nor reset's marker (one key, never made in a crowd).
  const counting: BatchOptions = { undoIfAbandoned: false, evenWhenDown: false, onUndo: undefined, expirationJitterS };
  const undoing: BatchOptions = { undoIfAbandoned: true, evenWhenDown: false, onUndo, expirationJitterS };
  // Decrements never create a key.
  const takingBack: BatchOptions = { undoIfAbandoned: false, evenWhenDown: true, onUndo, expirationJitterS: 0 };
  const maxParallelServers = options.maxParallelServers ?? DEFAULTS.memcachedMaxParallelServers;
  const maxInFlight = options.maxInFlight ?? DEFAULTS.memcachedMaxInFlight;
  let inFlight = 0;
  const { onOperation } = options;

  /** Tells onOperation how long a store call took and how it ended, when it listens. */
  function timed<T>(operation: StoreOperation, call: Promise<T>): Promise<T> {
    if (!onOperation) return call;
    const started = performance.now();
    return call.then(
      (result) => {
        onOperation(operation, (performance.now() - started) / 1000, 'ok');
        return result;
      },
      (error: unknown) => {
        tellFailed(operation, started, error);
        throw error;
      },
    );
  }

  /** Tells onOperation of a call begun at `started` (performance.now()) that failed with `error`. */
  function tellFailed(operation: StoreOperation, started: number, error: unknown): void {
    onOperation?.(
      operation,
      (performance.now() - started) / 1000,
      error instanceof StoreOverloadedError ? 'overloaded' : 'unavailable',
    );
  }

  /**
   * One batch to one server, sending again the increments that lost a creation race. A
   * `movable` call whose server failed and left placement meanwhile fails with
   * StoreMovedError, so that the limiter builds it again for the server its keys moved to
   * (bucket times come from that server's clock: they can differ by a second).
   */
  function runOn(index: number, request: BatchRequest, options: BatchOptions, movable: boolean): Promise<BatchReplies> {
    const server = servers[index] as ServerConnection;
    // Absolute expirations are read by the server's clock.
    const now = nowOf[index];
    const first = runBatch(server, request, options, now);
    return first.then(
      (replies) => (replies.raced.length === 0 ? replies : raceAgain(index, request, replies, options)),
      movable ? movedOnFailure[index] : undefined,
    );
  }

  /**
   * A call to `index` failed: `again` where its keys now go when the server has left placement
   * (once a question to the others, if one is on its way, has settled whether it does), else the error.
   */
  async function afterMove<T>(index: number, error: unknown, again: () => Promise<T>): Promise<T> {
    if (!(error instanceof StoreUnavailableError)) throw error;
    if (!placement.isPlaced(index)) return again();
    if (!confirming) throw error;
    await confirming;
    if (placement.isPlaced(index)) throw error;
    return again();
  }

  async function raceAgain(
    index: number,
    request: BatchRequest,
    replies: BatchReplies,
    options: BatchOptions,
  ): Promise<BatchReplies> {
    const server = servers[index] as ServerConnection;
    const increments = replies.raced.map((i) => request.increments[i] as CounterIncrement);
    const again = await runBatch(server, { increments, decrements: [], reads: [] }, options, nowOf[index]);
    if (again.raced.length > 0) throw new StoreUnavailableError(`memcached ${server.label} would not create a counter`);
    replies.raced.forEach((position, i) => (replies.incremented[position] = again.incremented[i] ?? 0));
    return { incremented: replies.incremented, read: replies.read, raced: [] };
  }

  /**
   * A call, split by server. Only a call to one server is `movable` (see runOn): shares of a
   * call spanning servers that answered have counted, and must not count again.
   */
  function run(request: BatchRequest, batch: BatchOptions, movable: boolean): Promise<BatchReplies> {
    if (servers.length === 1) return runOn(0, request, batch, false);
    const shares = sharesByServer(request, serverOf);
    const [single] = shares;
    if (shares.size === 1 && single) return runOn(single[0], request, batch, movable);
    return runSpread(request, shares, batch);
  }

  /** Keys spanning servers: one batch per server, a bounded number at once. */
  async function runSpread(
    request: BatchRequest,
    shares: Map<number, ServerShare>,
    batch: BatchOptions,
  ): Promise<BatchReplies> {
    const incremented = new Array<number>(request.increments.length).fill(0);
    const read = new Array<number>(request.reads.length).fill(0);
    await pLimit(maxParallelServers).map(shares, async ([server, share]) => {
      const replies = await runOn(server, share, batch, false);
      share.incrementPositions.forEach((position, i) => (incremented[position] = replies.incremented[i] ?? 0));
      share.readPositions.forEach((position, i) => (read[position] = replies.read[i] ?? 0));
    });
    return { incremented, read, raced: [] };
  }

  /**
   * A check for a server known down, refused: while the others are being asked whether its
   * clients can move (see onUnsure), it waits for the answer, and then fails with
   * StoreMovedError if they moved (the limiter builds it again for their server), else with
   * `refused`. Not waiting would decide it by onStoreError while another server answers.
   */
  async function whileAsking(index: number, refused: StoreUnavailableError): Promise<never> {
    if (confirming) await confirming;
    if (!placement.isPlaced(index))
      throw new StoreMovedError(
        `memcached ${servers[index]?.label ?? ''} is down; its clients are counted on another server now`,
      );
    throw refused;
  }

  /** Why a check's call to `target` is refused before it is sent, if it is. */
  function refusal(target: ServerConnection | undefined): StoreUnavailableError | StoreOverloadedError | undefined {
    // A server known to be down decides the check by its event's rule at once: that is
    // an outage, not an overload, and must not be answered as one.
    if (target?.down !== undefined)
      return new StoreUnavailableError(`memcached ${target.label} is down (${target.down})`);
    // A slow server must not make checks pile up without bound: refuse at once.
    // Decrements are exempt: they take back denied requests, and are rare.
    if (inFlight >= maxInFlight)
      return new StoreOverloadedError(`${maxInFlight} Memcached calls are already in flight`);
    return undefined;
  }

  /** A check's call, not timed: counts in flight, refuses past maxInFlight, fails at once for a server known down. */
  function incrementAndReadNow(
    increments: readonly CounterIncrement[],
    reads: readonly string[],
    call: IncrementOptions,
  ): Promise<IncrementAndReadResult> {
    const index = servers.length === 1 ? 0 : serverOfCheck(increments[0]?.key ?? reads[0] ?? '');
    const refused = refusal(servers[index]);
    if (refused)
      return timed(
        'incrementAndRead',
        refused instanceof StoreUnavailableError ? whileAsking(index, refused) : Promise.reject(refused),
      );
    const started = onOperation ? performance.now() : 0;
    inFlight++;
    // Timed and counted out of flight in one settlement, not a promise for each: this is every check's call.
    return run(
      { increments, decrements: [], reads },
      call.admittedIfUnanswered === false ? undoing : counting,
      true,
    ).then(
      (replies) => {
        inFlight--;
        onOperation?.('incrementAndRead', (performance.now() - started) / 1000, 'ok');
        // An increment always answers a value (it creates missing keys).
        return { incremented: replies.incremented, read: replies.read };
      },
      (error: unknown) => {
        inFlight--;
        tellFailed('incrementAndRead', started, error);
        throw error;
      },
    );
  }

  /**
   * A check's call on one key (compare-and-swap's), not timed: to the server of the key,
   * refused as incrementAndRead's are, counted in flight while it runs. When it fails because
   * its server left placement meanwhile, `onMoved` answers instead, given the key's server now.
   */
  function onServerOf<T>(
    key: string,
    call: (server: ServerConnection, index: number) => Promise<T>,
    onMoved: (now: number) => Promise<T>,
  ): Promise<T> {
    const index = serverOf(key);
    const server = servers[index] as ServerConnection;
    const refused = refusal(server);
    if (refused) {
      if (!(refused instanceof StoreUnavailableError)) return Promise.reject(refused);
      return whileAsking(index, refused).catch((error: unknown) => {
        if (error instanceof StoreMovedError) return onMoved(serverOf(key));
        throw error;
      });
    }
    inFlight++;
    return call(server, index)
      .catch((error: unknown) => afterMove(index, error, () => onMoved(serverOf(key))))
      .finally(() => {
        inFlight--;
      });
  }

  /**
   * A version as the store answers it: with several servers, tagged with its server (index + 1,
   * above the 64 bits of Memcached's CAS unique), since each server numbers its own: a swap
   * carrying another server's version (read before a move) must not match by chance.
   */
  function taggedRead(index: number, key: string): Promise<VersionedValue> {
    const read = readVersioned(servers[index] as ServerConnection, key);
    if (servers.length === 1) return read;
    return read.then(({ value, version }) => ({
      value,
      version: version === undefined ? undefined : version | (BigInt(index + 1) << 64n),
    }));
  }

  /** The decrements whose key has not moved within a take-back's time (two deadlines). */
  function stayedPut(decrements: readonly CounterDecrement[]): readonly CounterDecrement[] {
    if (servers.length === 1) return decrements;
    return decrements.filter(({ key }) => !placement.movedWithin(key, 2 * timeoutMs));
  }

  /** Whether a server answers now, and what it says of its evictions or why not. */
  async function answerOf(server: ServerConnection): Promise<{ up: boolean; error?: string; evictions?: number }> {
    // A server known to be down is not asked again: its probe will tell when it is back.
    if (server.down !== undefined) return { up: false, error: `memcached ${server.label} is down (${server.down})` };
    try {
      const { stats } = await serverStats(server, HEALTH_STATS);
      return { up: true, evictions: Number(stats.evictions ?? 0) };
    } catch (error) {
      return { up: false, error: error instanceof Error ? error.message : String(error) };
    }
  }

  /** Where a server's clients are, as /readyz lists it. */
  function placeOf(index: number, up: boolean): Pick<ServerHealth, 'state' | 'failedOverTo' | 'returnsInMs'> {
    const place = placement.placeOf(index);
    if (place.state !== 'failed-over') return { state: up ? place.state : 'down' };
    return {
      state: 'failed-over',
      failedOverTo: place.to,
      ...(place.returnsInMs === undefined ? {} : { returnsInMs: place.returnsInMs }),
    };
  }

  return {
    kind: 'memcached',
    shared: true,
    description: `memcached ${endpoints.map((endpoint) => endpoint.label).join(',')}`,
    clock: {
      now: (key) => clockOf(serverOf(key)).now(),
      ready: async () => {
        await Promise.all(clocks.map((clock) => clock.ready()));
      },
    },

    incrementAndRead: (
      increments: readonly CounterIncrement[],
      reads: readonly string[],
      call: IncrementOptions = {},
    ): Promise<IncrementAndReadResult> => incrementAndReadNow(increments, reads, call),

    decrement: (decrements: readonly CounterDecrement[]): Promise<void> =>
      // Taking back must reach the server whenever it answers, or a denied request stays counted.
      timed(
        'decrement',
        // Never sent again elsewhere, nor where a key moved just now: that server never counted
        // what it would take back. Left counted instead, which errs towards denying.
        run({ increments: [], decrements: stayedPut(decrements), reads: [] }, takingBack, false).then(() => undefined),
      ),

    reset: (marker: CounterSet, deletes: readonly string[]): Promise<void> =>
      timed(
        'reset',
        (async () => {
          const serverFor = (key: string) => servers[serverOf(key)] as ServerConnection;
          await setCounter(
            serverFor(marker.key),
            marker.key,
            marker.value,
            marker.ttlSeconds,
            clockOf(serverOf(marker.key)).now(),
          );
          for (const key of deletes) await deleteKey(serverFor(key), key);
        })(),
      ),

    readVersioned: (key: string): Promise<VersionedValue> => {
      serverOfCheck(key);
      return timed(
        'readVersioned',
        // A read is sent again where the key now goes.
        onServerOf(
          key,
          (_server, index) => taggedRead(index, key),
          (now) => taggedRead(now, key),
        ),
      );
    },

    swap(key: string, value: number, ttlSeconds: number, expected: StoreVersion | undefined): Promise<boolean> {
      const tag = servers.length === 1 || expected === undefined ? undefined : Number(expected >> 64n) - 1;
      const version = tag === undefined || expected === undefined ? expected : expected & CAS_BITS;
      // A caller's mistake, not the store's: neither sent nor counted.
      const invalid = swapArgumentError(value, ttlSeconds, version);
      if (invalid) return Promise.reject(invalid);
      if (tag === -1) return Promise.reject(new RangeError(`swap: ${expected} is not a version readVersioned answers`));
      // Read on a server that has since left placement, or come back: lost, to be read again where the key is now.
      if (tag !== undefined && tag !== serverOf(key)) return Promise.resolve(false);
      return timed(
        'swap',
        onServerOf(
          key,
          // Absolute expirations (over 30 days) are read by the server's clock.
          (server, index) => swapCounter(server, key, value, ttlSeconds, version, nowOf[index] as () => number),
          // Its server failed and left: whether it landed there no longer matters; the caller reads again where the key is now.
          () => Promise.resolve(false),
        ),
      );
    },

    remove(key: string, expected: StoreVersion): Promise<boolean> {
      const tag = servers.length === 1 ? undefined : Number(expected >> 64n) - 1;
      const version = tag === undefined ? expected : expected & CAS_BITS;
      if (version <= 0n || tag === -1)
        return Promise.reject(new RangeError(`remove: ${expected} is not a version readVersioned answers`));
      // Read on a server that has since left placement, or come back: the key there is not the one read.
      if (tag !== undefined && tag !== serverOf(key)) return Promise.resolve(false);
      return timed(
        'remove',
        onServerOf(
          key,
          (server) => removeCounter(server, key, version),
          () => Promise.resolve(false),
        ),
      );
    },

    async ping(): Promise<void> {
      await pLimit(maxParallelServers).map(servers, (server) =>
        runBatch(server, { increments: [], decrements: [], reads: [] }),
      );
    },

    async health(): Promise<ServerHealth[]> {
      const answers = await pLimit(maxParallelServers).map(servers, answerOf);
      // A server found down just now (by these very questions, as a frozen one is) may be
      // leaving placement while the others are asked whether they answer (see onUnsure): its
      // place is known once they have, within a deadline. Read before, it would say "down",
      // and /readyz answer 503 for a server whose clients are about to be counted elsewhere.
      if (confirming) await confirming;
      return servers.map((server, i) => {
        const offset = clockOf(i).offsetFromWallMs;
        const clockOffset = offset === undefined ? {} : { clockOffsetMs: Math.round(offset) };
        const answer = answers[i] as Awaited<ReturnType<typeof answerOf>>;
        return { server: server.label, ...answer, ...placeOf(i, answer.up), ...clockOffset };
      });
    },

    close(): Promise<void> {
      closed = true;
      placement.stop();
      for (const clock of clocks) clock.stop();
      for (const server of servers) server.close();
      return Promise.resolve();
    },
  };
}

/**
 * A library's warning that a server cannot be reached: without it, every check of its clients
 * would be answered by onStoreError (allowed, degraded) without a word. Once per outage, as
 * the connection tells of a server going down once until it answers again.
 */
function outageWarning(logger: StoreLogger | false, serverCount: number) {
  const elsewhere = serverCount > 1 ? ' counted on another server if failover is on and one answers, otherwise' : '';
  return (server: string, { up, reason = 'no reason' }: { up: boolean; reason?: string }): void => {
    if (up || !logger) return;
    logger.warn(
      `memgate: Memcached ${server} cannot be reached (${reason}); until it answers, checks of its clients are${elsewhere} decided by their event's onStoreError (allowed and marked degraded by default). store.health() tells which servers answer.`,
    );
  };
}

/** Splits one call by server, remembering where each answer belongs in the caller's order. */
function sharesByServer(request: BatchRequest, serverOf: (key: string) => number): Map<number, ServerShare> {
  const shares = new Map<number, ServerShare>();
  const shareOf = (key: string): ServerShare => {
    const server = serverOf(key);
    let share = shares.get(server);
    if (!share) {
      share = { increments: [], incrementPositions: [], decrements: [], reads: [], readPositions: [] };
      shares.set(server, share);
    }
    return share;
  };
  request.increments.forEach((op, i) => {
    const share = shareOf(op.key);
    share.increments.push(op);
    share.incrementPositions.push(i);
  });
  for (const op of request.decrements) shareOf(op.key).decrements.push(op);
  request.reads.forEach((key, i) => {
    const share = shareOf(key);
    share.reads.push(key);
    share.readPositions.push(i);
  });
  return shares;
}
