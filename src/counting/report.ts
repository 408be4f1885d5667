// What metrics and usage history receive of each decision, built in this one place: the step
// reports every check it decides (listed ones and repeated denials included) exactly once.
import type { Decision } from './decision.js';
import type { CheckItem } from './check-item.js';

/** What a report names of a check: its event (its plan's), its client, and whether it was asked to count. */
export type Reported = Pick<CheckItem, 'feature' | 'counting'> & { readonly plan: { readonly event: string } };

/** How a decision was reached: from memory, or with how many keys read. */
export interface HowDecided {
  /** Answered from this instance's memory of a denial, without the store. */
  readonly fromDeniedCache: boolean;
  /** Keys read from the store (the reset marker included), over every round of the check; 0 for a repeated denial. */
  readonly keysRead: number;
  /** The window had settled buckets whose counts were not kept and had to be read. */
  readonly settledMiss: boolean;
}

/** A denial repeated from memory: no store call, no key read. */
export const FROM_MEMORY: HowDecided = { fromDeniedCache: true, keysRead: 0, settledMiss: false };

/** Decided without the store (a list), or on the call of an earlier check of the same counter: nothing read. */
export const NOTHING_READ: HowDecided = { fromDeniedCache: false, keysRead: 0, settledMiss: false };

/** What a decision cost and where it came from, for metrics and usage history. */
export interface ObservedDecision extends HowDecided {
  readonly event: string;
  /** Who asked: usage history keeps the heaviest clients. */
  readonly feature: string;
  readonly kind: 'check' | 'peek';
  readonly decision: Decision;
}

/** A reservation settled: the event and client, what it reserved, and its actual cost. */
export interface SettledReservation {
  readonly event: string;
  readonly feature: string;
  readonly reserved: number;
  readonly cost: number;
}

/** Tells onDecision of one check's answer, and how it was reached. */
export function reportDecision(
  onDecision: ((observed: ObservedDecision) => void) | undefined,
  item: Reported,
  decision: Decision,
  how: HowDecided,
): void {
  // Fields named, not spread: this runs for every decision, the repeated denials of an abusive client too.
  onDecision?.({
    event: item.plan.event,
    feature: item.feature,
    kind: item.counting ? 'check' : 'peek',
    decision,
    fromDeniedCache: how.fromDeniedCache,
    keysRead: how.keysRead,
    settledMiss: how.settledMiss,
  });
}
