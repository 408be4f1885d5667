// Settles through Envoy (docs/envoy.md, "Costs known after the response"): the request's call
// reserves its descriptor's hits_addend where the descriptor's rate_limit takes reservations (a
// check of the call that reserves: envoy-decisions.ts), and answers the reservation's id in
// dynamic_metadata; Envoy's stream-done call (apply_on_stream_done) carries it back as a
// `memgate_reservation` entry, with the actual cost as hits_addend, and settles it here.
import { RESERVATION_ENTRY, type EnvoyConfig, type EnvoyRateLimit } from '../config/envoy-config.js';
import { matchEnvoyDescriptor } from '../config/envoy-match.js';
import { LimiterInputError } from '../counting/errors.js';
import type { Limiter } from '../counting/limiter.js';
import { featureName } from '../shared/feature-name.js';
import { StoreUnavailableError } from '../store/counter-store.js';
import type { RateLimitDescriptor, RateLimitRequest } from './messages.js';

/** What a settle asks of the call's snapshot. */
type Settler = Pick<Limiter, 'settle'>;

/** A settle memgate did not make, and why; the call is answered all the same. */
export interface SettleRefusal {
  readonly domain: string;
  /** The event of the descriptor's limit; undefined when no limit matched. */
  readonly event: string | undefined;
  /**
   * The limiter's code (unknown_reservation, reservation_expired, reservation_settled,
   * reserve_off…), or store_unavailable when Memcached did not answer.
   */
  readonly code: string;
  readonly message: string;
}

/** What a call's settles came to, before the rest of the call is decided. */
export interface SettlePass {
  /**
   * The call's descriptors as the rest of the decision sees them: a settle memgate could not
   * verify becomes its descriptor without the entry, asked with a hits_addend of 0.
   */
  readonly descriptors: readonly RateLimitDescriptor[];
  /** Per descriptor, the limit a settle was made against (or verified as made already); it needs no other decision. */
  readonly settled: readonly (EnvoyRateLimit | undefined)[];
}

/**
 * Settles the reservations a call names, each against the limit its other entries match.
 *
 * A settle is answered OK whatever comes of it: the cost was incurred, and Envoy ignores a
 * stream-done call's answer. One memgate cannot verify (an id it never gave, or too old to
 * tell, a limit without reservations) is not trusted with that OK: its descriptor is decided
 * as a check-only question (hits_addend 0), which counts nothing and is OVER_LIMIT when the
 * limit is full. So an entry a client managed to forge into a request's call can neither
 * change a count nor pass a full limit.
 */
export async function settleNamed(
  limiter: Settler,
  config: EnvoyConfig | undefined,
  request: RateLimitRequest,
  onRefused: (refusal: SettleRefusal) => void,
): Promise<SettlePass> {
  const asked = request.descriptors.map(settleAsked);
  if (asked.every((one) => one === undefined)) return { descriptors: request.descriptors, settled: [] };
  const settled: (EnvoyRateLimit | undefined)[] = [];
  const descriptors = await Promise.all(
    request.descriptors.map(async (descriptor, index): Promise<RateLimitDescriptor> => {
      const one = asked[index];
      if (!one) return descriptor;
      const outcome = await settleOne(limiter, config, request, descriptor, one, onRefused);
      if (outcome.settled) {
        settled[index] = outcome.settled;
        return descriptor;
      }
      // Unverified: the descriptor without the entry, as a question that counts nothing.
      return { entries: one.entries, hitsAddend: 0 };
    }),
  );
  return { descriptors, settled };
}

interface SettleAsked {
  /** Undefined when the descriptor names several: none of them is settled. */
  readonly id: string | undefined;
  /** The descriptor's other entries: they name the limit, as in the request's call. */
  readonly entries: RateLimitDescriptor['entries'];
}

function settleAsked(descriptor: RateLimitDescriptor): SettleAsked | undefined {
  const named = descriptor.entries.filter((entry) => entry.key === RESERVATION_ENTRY);
  if (named.length === 0) return undefined;
  return {
    id: named.length === 1 ? named[0]?.value : undefined,
    entries: descriptor.entries.filter((entry) => entry.key !== RESERVATION_ENTRY),
  };
}

/** Codes of a settle refused for a reservation memgate holds a record of: the settle is verified. */
const VERIFIED_REFUSALS: ReadonlySet<string> = new Set(['reservation_settled']);

async function settleOne(
  limiter: Settler,
  config: EnvoyConfig | undefined,
  request: RateLimitRequest,
  descriptor: RateLimitDescriptor,
  asked: SettleAsked,
  onRefused: (refusal: SettleRefusal) => void,
): Promise<{ readonly settled?: EnvoyRateLimit }> {
  const { domain } = request;
  const match = config ? matchEnvoyDescriptor(config, domain, asked.entries) : undefined;
  const event = match?.kind === 'limit' ? match.event : undefined;
  const refuse = (code: string, message: string) => {
    onRefused({ domain, event, code, message });
  };
  if (match?.kind !== 'limit' || !match.rateLimit.reservations || match.rateLimit.requestsPerUnit === 0) {
    refuse('reserve_off', `the descriptor's other entries match no limit that takes reservations`);
    return {};
  }
  if (asked.id === undefined) {
    refuse('unknown_reservation', `the descriptor has several ${RESERVATION_ENTRY} entries`);
    return {};
  }
  // The actual cost: the descriptor's own hits_addend, as Envoy sends it; 0 refunds the whole reservation.
  const cost = descriptor.hitsAddend ?? Math.max(1, request.hitsAddend);
  try {
    await limiter.settle({ event: match.event, feature: featureName(match.feature), id: asked.id, cost });
    return { settled: match.rateLimit };
  } catch (error) {
    if (error instanceof LimiterInputError) {
      refuse(error.code, error.message);
      return VERIFIED_REFUSALS.has(error.code) ? { settled: match.rateLimit } : {};
    }
    if (error instanceof StoreUnavailableError) {
      // Nothing can be counted now, and the reservation stays counted as reserved: answer OK.
      refuse('store_unavailable', error.message);
      return { settled: match.rateLimit };
    }
    throw error;
  }
}
