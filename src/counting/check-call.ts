// What a check tells the store with its call, and what a decision cost: shared by the lone check
// (limiter.ts) and checks decided together (together.ts).
import type { OnStoreError } from '../config/policies.js';
import type { IncrementOptions } from '../store/counter-store.js';

/** How a decision was reached: from memory, or with how many keys read. */
export interface HowDecided {
  /** Answered from this instance's memory of a denial, without the store. */
  readonly fromDeniedCache: boolean;
  /** Keys read from the store (the reset marker included); 0 for a repeated denial. */
  readonly keysRead: number;
  /** The window had settled buckets whose counts were not kept and had to be read. */
  readonly settledMiss: boolean;
}

/** A denial repeated from memory: no store call, no key read. */
export const FROM_DENIED_CACHE: HowDecided = { fromDeniedCache: true, keysRead: 0, settledMiss: false };

/** What a check tells the store about a request it cannot get an answer for (see IncrementOptions). */
export const ADMITTED_IF_UNANSWERED: IncrementOptions = { admittedIfUnanswered: true };
export const REFUSED_IF_UNANSWERED: IncrementOptions = { admittedIfUnanswered: false };

/** A counting call's options by its event's rule: a store that never answers keeps the increment only where the rule admits. */
export function unansweredBy(onStoreError: OnStoreError): IncrementOptions {
  return onStoreError === 'allow' ? ADMITTED_IF_UNANSWERED : REFUSED_IF_UNANSWERED;
}
