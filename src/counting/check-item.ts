// A check as the step takes it: what a caller asked, resolved (resolve.ts) into the plan of its
// client and plain values. Types only; the same for every surface.
import type { EventPlan, Listed } from './plan-types.js';

/** A check resolved (resolve.ts): what the step decides. Plain data; the same for every surface. */
export interface CheckItem {
  /** The plan chosen for the client: the event's own, a tier's, an override's (for a listed client, the event's). */
  readonly plan: EventPlan;
  readonly feature: string;
  /** What it asks room for; for a lease, the most it takes. */
  readonly cost: number;
  /** The caller asked to count it (a check); false for a peek. */
  readonly counting: boolean;
  /** Its denial denies the request (false: a shadow check). */
  readonly enforced: boolean;
  /** The cost exceeds a limit: no request of it can ever be allowed, so it is never counted. */
  readonly impossible: boolean;
  /** A list holds the client: decided without limits or counts. */
  readonly listed?: Listed | undefined;
  /**
   * What is recorded of it after the decision: a lease takes what remains (from 1 up to
   * `cost`), a reservation its cost; either way a count the store did not answer is never
   * left standing, since no record will name it.
   */
  readonly hold?: 'lease' | 'reservation' | undefined;
  /** The plan's shadow limits beside its enforced ones: decided with it, never denying; the answer says what they did. */
  readonly shadow?: CheckItem | undefined;
}
