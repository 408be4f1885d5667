/**
 * memgate/express-rate-limit: a Store for express-rate-limit 8 whose counts are memgate's
 * sliding windows, shared by every instance of the application.
 *
 *     app.use(rateLimit({ windowMs: 60_000, limit: 5, standardHeaders: 'draft-8',
 *       store: new MemgateStore({ url: 'http://memgate:8080', event: 'login' }) }));
 *
 * memgate decides: `increment` is a check (which counts only when allowed), and its answer
 * is told to express-rate-limit as `totalHits` over `limit` exactly when memgate denied
 * (see library-counts.ts). docs/frameworks.md has the whole mapping.
 */
import type { ClientRateLimitInfo, IncrementResponse, Options, Store } from 'express-rate-limit';
import type { Decision } from '../shared/decision.js';
import { adminCall, adminTokenMessage } from './admin-calls.js';
import { COUNTED_CHECKS_DEFAULTS, CountedChecks, type CountedChecksOptions } from './counted-checks.js';
import { featureName } from '../shared/feature-name.js';
import {
  closestToExhaustion,
  consoleWarn,
  libraryCounts,
  mismatchWarning,
  onceEach,
  tightestLimit,
} from './library-counts.js';
import { checkRefused, openClient, type ClientSource, type MemgateClientLike } from './memgate-client.js';

const WHO = 'memgate/express-rate-limit';

export interface MemgateStoreOptions extends ClientSource {
  /** The memgate event this limiter checks; each key is a feature of it. */
  readonly event: string;
  /** Where the one-time warnings about mismatched settings go (console.warn by default). */
  readonly warn?: ((message: string) => void) | undefined;
  /** How much of its recent checks the store keeps for `decrement` (default 10,000 keys, 16 checks each). */
  readonly refundMemory?: Partial<CountedChecksOptions> | undefined;
}

export class MemgateStore implements Store {
  /** Counts live in memgate, shared by every instance: a key counted here counts everywhere. */
  readonly localKeys = false;
  /** Keys of different events are different counters (express-rate-limit's double-count check reads this). */
  readonly prefix: string;
  readonly event: string;

  readonly #client: MemgateClientLike;
  readonly #ownsClient: boolean;
  readonly #ownClientHasToken: boolean;
  readonly #warn: (message: string | undefined) => void;
  readonly #checks: CountedChecks;
  /** express-rate-limit's `limit`, when it is a number; else the event's tightest limit is used. */
  #limit: number | undefined;
  #windowMs: number | undefined;
  /** The event's tightest limit, from the last decision that listed limits. */
  #policyLimit: number | undefined;
  #compared = false;

  constructor(options: MemgateStoreOptions) {
    const { event, warn = consoleWarn, refundMemory } = options;
    if (typeof event !== 'string' || event === '') throw new TypeError(`${WHO}: event must be a memgate event name`);
    const { client, owned } = openClient(options, WHO);
    this.event = event;
    this.prefix = `memgate:${event}:`;
    this.#client = client;
    this.#ownsClient = owned;
    this.#ownClientHasToken = owned && options.clientOptions?.adminToken !== undefined;
    this.#warn = onceEach(warn);
    this.#checks = new CountedChecks({ ...COUNTED_CHECKS_DEFAULTS, ...refundMemory });
  }

  /** express-rate-limit hands over its options: the limit and window to compare with memgate's. */
  init(options: Options): void {
    this.#limit = typeof options.limit === 'number' ? options.limit : undefined;
    this.#windowMs = options.windowMs;
    if (typeof options.limit === 'function') {
      this.#warn(
        `${WHO}: limit is a function, so it cannot be compared with event "${this.event}"'s policy; ` +
          `a check memgate denies is reported as the tightest limit + 1 hits: make the function return that limit`,
      );
    }
    if (
      (options.skipFailedRequests || options.skipSuccessfulRequests) &&
      this.#ownsClient &&
      !this.#ownClientHasToken
    ) {
      // express-rate-limit logs an error thrown here, at start, rather than at the first refund.
      throw new Error(adminTokenMessage(WHO, 'decrement'));
    }
  }

  async increment(libraryKey: string): Promise<IncrementResponse> {
    const key = featureName(libraryKey);
    const at = Date.now();
    const decision = await this.#client.check(this.event, key).catch((error: unknown) => {
      throw checkRefused(WHO, this.event, error);
    });
    this.#learn(decision);
    this.#checks.record(key, { at, cost: 1, counted: decision.allowed && decision.degraded !== true });
    const { hits, resetAtMs } = libraryCounts(decision, this.#displayLimit(), Date.now());
    return { totalHits: hits, resetTime: new Date(resetAtMs) };
  }

  /** Gives back this key's newest check, at the time it was counted; a denied check counted nothing. */
  async decrement(libraryKey: string): Promise<void> {
    const key = featureName(libraryKey);
    const check = this.#checks.takeNewest(key);
    if (!check?.counted) return;
    await adminCall(WHO, 'decrement', () => this.#client.refund(this.event, key, { cost: check.cost, at: check.at }));
  }

  async resetKey(libraryKey: string): Promise<void> {
    const key = featureName(libraryKey);
    this.#checks.forget(key);
    await adminCall(WHO, 'resetKey', () => this.#client.reset(this.event, key));
  }

  /** What memgate would say now, counting nothing (express-rate-limit's getKey). */
  async get(libraryKey: string): Promise<ClientRateLimitInfo | undefined> {
    const decision = await this.#client.peek(this.event, featureName(libraryKey)).catch((error: unknown) => {
      throw checkRefused(WHO, this.event, error);
    });
    this.#learn(decision);
    const closest = closestToExhaustion(decision.limits);
    if (!closest) return undefined;
    const limit = this.#displayLimit();
    return {
      totalHits: Math.max(0, limit - closest.remaining),
      resetTime: new Date(Date.now() + closest.resetSeconds * 1000),
    };
  }

  async shutdown(): Promise<void> {
    if (this.#ownsClient) await this.#client.close();
  }

  #displayLimit(): number {
    return this.#limit ?? this.#policyLimit ?? 1;
  }

  #learn(decision: Decision): void {
    const tightest = tightestLimit(decision.limits);
    if (!tightest) return;
    this.#policyLimit = tightest.limit;
    if (this.#compared) return;
    this.#compared = true;
    this.#warn(
      mismatchWarning(this.event, decision, {
        library: 'express-rate-limit',
        limitName: 'limit',
        windowName: 'windowMs',
        limit: this.#limit,
        windowMs: this.#windowMs,
      }),
    );
  }
}

export default MemgateStore;
