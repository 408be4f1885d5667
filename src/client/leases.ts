/**
 * Quota leases, held in the caller's process: memgate counts several units of a feature at
 * once (POST /lease), and checks spend them here, without a request, until the lease's
 * life ends or they run out; then what is left goes back (POST /lease/return), and the
 * next check takes a new lease. Units are counted before they are spent, so a lease never
 * admits beyond the limit; what it costs others is that its unspent units are refused to
 * them until it is returned.
 */
import type { Decision, Lease, LimitStatus } from '../shared/contract.js';
import type { ClientDecision } from './local-denials.js';

/** A lease as memgate granted it (its expiresAt is on memgate's clock: the client keeps its own). */
export type GrantedLease = Pick<Lease, 'id' | 'units' | 'seconds'>;

/** What asking memgate for a lease came to. */
export type LeaseAnswer =
  /** Granted (with its decision), or denied like a check, or degraded. */
  | { readonly kind: 'decision'; readonly decision: ClientDecision; readonly lease?: GrantedLease | undefined }
  /** The event takes no leases: its checks go to memgate as checks. */
  | { readonly kind: 'off' };

export interface LeasesOptions {
  /** Units each lease asks for; a check of a larger cost asks for its cost. */
  readonly units: number;
  /** A lease ends this long before its life, so that its return reaches memgate in time. */
  readonly marginMs: number;
  /** Leases held at once; past it the oldest is returned early. */
  readonly maxLeases: number;
  /** A monotonic clock in milliseconds. */
  readonly now: () => number;
  /** POST /lease. */
  readonly take: (event: string, feature: string, units: number) => Promise<LeaseAnswer>;
  /** POST /lease/return; never rejects (a lost return leaves the units counted until they leave the window). */
  readonly give: (event: string, feature: string, id: string, unused: number) => Promise<void>;
}

interface HeldLease {
  readonly event: string;
  readonly feature: string;
  readonly id: string;
  readonly units: number;
  spent: number;
  /** Spent only while now < endsAt. */
  readonly endsAt: number;
  /** memgate's statuses when it granted the lease: what remained for everyone else. */
  readonly limits: readonly LimitStatus[];
  readonly timer: ReturnType<typeof setTimeout>;
}

export interface Leases {
  /**
   * Decides a check from the feature's lease when it has the units, else takes a new
   * lease (one at a time per feature: concurrent checks wait for it), or `check` for
   * events without leases.
   */
  decide(event: string, feature: string, cost: number, check: () => Promise<ClientDecision>): Promise<ClientDecision>;
  /** Checks answered from a lease so far. */
  readonly spent: number;
  /** Leases taken so far. */
  readonly taken: number;
  /** Returns every lease held (at close). */
  returnAll(): Promise<void>;
}

export function createLeases({ units, marginMs, maxLeases, now, take, give }: LeasesOptions): Leases {
  const held = new Map<string, HeldLease>();
  const taking = new Map<string, Promise<unknown>>();
  const eventsWithout = new Set<string>();
  const returning = new Set<Promise<void>>();
  let spentCount = 0;
  let takenCount = 0;

  const giveBack = (key: string, lease: HeldLease) => {
    clearTimeout(lease.timer);
    if (held.get(key) === lease) held.delete(key);
    const returned = give(lease.event, lease.feature, lease.id, lease.units - lease.spent);
    returning.add(returned);
    void returned.finally(() => returning.delete(returned));
  };

  const spend = (lease: HeldLease, cost: number): ClientDecision | undefined => {
    if (now() >= lease.endsAt || lease.units - lease.spent < cost) return undefined;
    lease.spent += cost;
    spentCount++;
    return { allowed: true, limits: lease.limits, source: 'local' };
  };

  const hold = (
    key: string,
    event: string,
    feature: string,
    lease: GrantedLease,
    sentAt: number,
    decision: Decision,
  ) => {
    if (held.size >= maxLeases) {
      const [oldestKey, oldest] = held.entries().next().value as [string, HeldLease];
      giveBack(oldestKey, oldest);
    }
    // Its life counted from when it was asked for: memgate's clock started no earlier.
    const endsAt = sentAt + lease.seconds * 1000 - marginMs;
    const entry: HeldLease = {
      event,
      feature,
      id: lease.id,
      units: lease.units,
      spent: 0,
      endsAt,
      limits: decision.limits,
      timer: setTimeout(
        () => {
          giveBack(key, entry);
        },
        Math.max(0, endsAt - now()),
      ),
    };
    // Not a reason for the caller's process to stay alive.
    (entry.timer as { unref?: () => void }).unref?.();
    held.set(key, entry);
    return entry;
  };

  return {
    async decide(event, feature, cost, check) {
      if (eventsWithout.has(event)) return check();
      const key = `${event}\u0000${feature}`;
      for (;;) {
        const lease = held.get(key);
        if (lease) {
          const answer = spend(lease, cost);
          // A spent lease stays until the next check (or its end) returns it, with the next take in the same request.
          if (answer) return answer;
          // Ended, or short of this cost: back to memgate, and a new lease.
          giveBack(key, lease);
        }
        const pending = taking.get(key);
        if (pending) {
          await pending;
          continue;
        }
        const sentAt = now();
        const asked = take(event, feature, Math.max(units, cost));
        taking.set(key, asked);
        let answer: LeaseAnswer;
        try {
          answer = await asked;
        } finally {
          taking.delete(key);
        }
        if (answer.kind === 'off') {
          eventsWithout.add(event);
          return check();
        }
        if (!answer.lease) return answer.decision;
        takenCount++;
        const entry = hold(key, event, feature, answer.lease, sentAt, answer.decision);
        // Fewer units remained than this check costs: memgate decides it as a check.
        if (entry.units < cost) {
          giveBack(key, entry);
          return check();
        }
        // This check is the lease's first spend; it answers with memgate's decision.
        entry.spent += cost;
        return answer.decision;
      }
    },
    get spent() {
      return spentCount;
    },
    get taken() {
      return takenCount;
    },
    async returnAll() {
      for (const [key, lease] of [...held]) giveBack(key, lease);
      await Promise.allSettled([...returning]);
    },
  };
}
