/**
 * memgate/client: asks a memgate service about each check, over HTTP, and answers in the
 * caller's process what it can: denials that still hold (local-denials.ts) and, when
 * memgate cannot be reached, the `onError` rule. Concurrent checks share requests
 * (batcher.ts), over keep-alive connections (transport.ts).
 */
import { CLIENT_DEFAULTS } from '../shared/defaults.js';
import type {
  CheckRequest as CheckBody,
  Decision,
  Lease,
  Refunded,
  Released,
  ResetAnswer,
  Settled,
} from '../shared/contract.js';
import { createBatcher } from './batcher.js';
import { MemgateClientError, serverError } from './errors.js';
import { createLeases, type LeaseAnswer } from './leases.js';
import { createLocalDenials, type Asked, type ClientDecision } from './local-denials.js';
import { resolveOptions, type ClientOptions } from './options.js';
import { createReachability } from './reachability.js';
import { createTransport, TransportFailure, type HttpAnswer } from './transport.js';

export type { ClientDecision, ClientOptions };

/** What the client has done so far; the benchmark and the tests read it. */
export interface ClientStats {
  /** HTTP requests sent to memgate (checks, peeks and admin calls), answered or not. */
  readonly requests: number;
  /** Checks carried by those requests: each one memgate decides (and counts, when allowed). */
  readonly checksSent: number;
  /** Checks answered in this process: a denial that still holds, or `onError` without a request. */
  readonly answeredLocally: number;
  /** Checks and peeks answered `degraded: true`: by memgate's `onStoreError`, or by `onError` here. */
  readonly degraded: number;
  /** Quota leases taken (with `leaseUnits`). */
  readonly leasesTaken: number;
  /** Checks answered from a lease's units, without a request (counted in answeredLocally too). */
  readonly answeredFromLeases: number;
  /** Lease returns memgate did not take (unreachable, or too late): their units stayed counted until they left the window. */
  readonly leaseReturnsLost: number;
}

export interface CheckOptions {
  /** How much of the limit this check uses; a positive integer, 1 by default. */
  readonly cost?: number | undefined;
  /**
   * The client's tier (one of the event's `tiers`), as your server knows it: never one the end
   * user chose. A check with a tier is decided by memgate, never from a lease.
   */
  readonly tier?: string | undefined;
}

export interface ReserveOptions {
  /** The client's tier, as for a check. */
  readonly tier?: string | undefined;
}

/** A reservation settled: what it reserved, its actual cost, and the difference counted. */
export type { Settled };

export interface RefundOptions {
  /** The cost to take back; 1 by default. */
  readonly cost?: number | undefined;
  /** When the check was counted, in epoch milliseconds (this host's clock). */
  readonly at: number;
}

export interface MemgateClient {
  /** Decides and, when allowed, counts: memgate's /check, or a denial repeated locally. */
  check(event: string, feature: string, options?: CheckOptions): Promise<ClientDecision>;
  /**
   * Reserves `units` for a request whose actual cost is known only after it (memgate's /check
   * with `reserve`, for an event with a `reservations` section): allowed, the decision holds the
   * `reservation` to settle. Always asks memgate, never from a lease, never batched.
   */
  reserve(event: string, feature: string, units: number, options?: ReserveOptions): Promise<ClientDecision>;
  /** Settles a reservation with the actual cost (memgate's POST /settle): the difference is counted, once. */
  settle(event: string, feature: string, id: string, cost: number, options?: ReserveOptions): Promise<Settled>;
  /**
   * Releases the slot a check of a concurrency limit holds (its decision's `slot.id`), once the
   * request is done (memgate's POST /release). `released` is false when it was free already.
   */
  release(event: string, feature: string, id: string): Promise<Released>;
  /** memgate's /peek: the decision a check would get, counting nothing. Always asks memgate, never batched, never remembered. */
  peek(event: string, feature: string, options?: CheckOptions): Promise<ClientDecision>;
  /** Forgets what `feature` has counted for `event` (POST /admin/reset; needs adminToken), and its local denials. */
  reset(event: string, feature: string): Promise<ResetAnswer>;
  /** Takes back a counted cost (POST /admin/refund; needs adminToken), and forgets the feature's local denials. */
  refund(event: string, feature: string, options: RefundOptions): Promise<Refunded>;
  /** Waits for the checks under way, then closes the connections; later calls reject with `client_closed`. */
  close(): Promise<void>;
  readonly stats: ClientStats;
}

/** One check's fate at memgate. */
type Outcome =
  | { readonly kind: 'decision'; readonly decision: Decision }
  | { readonly kind: 'unreachable' }
  | { readonly kind: 'error'; readonly error: MemgateClientError };

const now = () => performance.now();

export function createClient(options: ClientOptions): MemgateClient {
  const settings = resolveOptions(options);
  const transport = createTransport(settings);
  const reachability = createReachability({ backoffMs: settings.errorBackoffMs, now });
  const denials = createLocalDenials({ maxEntries: settings.maxLocalDenials, now });
  const stats = { requests: 0, checksSent: 0, answeredLocally: 0, degraded: 0, leaseReturnsLost: 0 };
  const underWay = new Set<Promise<unknown>>();
  let closed = false;
  let closing: Promise<void> | undefined;

  const post = (path: string, body: unknown, headers?: Record<string, string>): Promise<HttpAnswer> => {
    stats.requests++;
    return transport.post(path, body, headers);
  };

  /** Sends checks: one alone to /check, more to /check/batch. Never rejects: each check gets its outcome. */
  const sendChecks = async (checks: readonly CheckBody[]): Promise<Outcome[]> => {
    // A batch whose features escape long (control characters) can outgrow memgate's body
    // limit for a batch: it goes as two halves instead of being refused whole.
    if (checks.length > 1 && batchBytes(checks) > CLIENT_DEFAULTS.batchBodyLimitBytes) {
      const half = Math.ceil(checks.length / 2);
      const [first, second] = await Promise.all([sendChecks(checks.slice(0, half)), sendChecks(checks.slice(half))]);
      return [...first, ...second];
    }
    stats.checksSent += checks.length;
    const single = checks.length === 1 ? checks[0] : undefined;
    const path = single ? '/check' : '/check/batch';
    let answer: HttpAnswer;
    try {
      answer = await post(path, single ?? checks);
    } catch (error) {
      if (error instanceof TransportFailure) return checks.map(() => ({ kind: 'unreachable' }));
      throw error;
    }
    if (single) return [outcomeOf(answer.status, answer.body, path)];
    const { status, body } = answer;
    if (status === 200 && Array.isArray(body) && body.length === checks.length) {
      return body.map((item: unknown) => {
        const itemStatus = typeof item === 'object' && item !== null && 'status' in item ? item.status : undefined;
        if (typeof itemStatus === 'number') return outcomeOf(itemStatus, item, path);
        return outcomeOf(isDecision(item) && !item.allowed ? 429 : 200, item, path);
      });
    }
    const whole = outcomeOf(status === 200 ? 502 : status, body, path);
    return checks.map(() => whole);
  };

  const batcher = createBatcher<CheckBody, Outcome>({
    windowMs: settings.batchWindowMs,
    maxSize: settings.maxBatchSize,
    send: sendChecks,
  });

  const degraded = (): ClientDecision =>
    settings.onError === 'allow'
      ? { allowed: true, limits: [], degraded: true, source: 'local' }
      : { allowed: false, limits: [], retryAfter: 1, degraded: true, source: 'local' };

  /** An outcome as the caller sees it; feeds what memgate's reachability is. */
  const settle = (outcome: Outcome): ClientDecision => {
    switch (outcome.kind) {
      case 'decision':
        reachability.answered();
        return { ...outcome.decision, source: 'server' };
      case 'unreachable':
        reachability.failed();
        return degraded();
      case 'error':
        reachability.answered();
        throw outcome.error;
    }
  };

  const askCheck = async (body: CheckBody): Promise<Asked> => {
    const sentAt = now();
    if (!reachability.mayAsk()) return { decision: degraded(), sentAt };
    return { decision: settle(await batcher.add(body)), sentAt };
  };

  /** A lease taken or returned: they travel together, in one POST /lease/batch per tick. */
  type LeaseOp =
    | { readonly kind: 'take'; readonly event: string; readonly feature: string; readonly units: number }
    | {
        readonly kind: 'return';
        readonly event: string;
        readonly feature: string;
        readonly id: string;
        readonly unused: number;
      };
  /** One lease operation's answer: its status and body, as /lease or /lease/return would send them alone. */
  type LeaseOpOutcome = { readonly status: number; readonly body: unknown } | undefined;

  const sendLeaseOps = async (ops: readonly LeaseOp[]): Promise<LeaseOpOutcome[]> => {
    const take = ops.flatMap((op) =>
      op.kind === 'take' ? [{ event: op.event, feature: op.feature, units: op.units }] : [],
    );
    const giveBack = ops.flatMap((op) =>
      op.kind === 'return' ? [{ event: op.event, feature: op.feature, id: op.id, unused: op.unused }] : [],
    );
    let answer: HttpAnswer;
    try {
      answer = await post('/lease/batch', {
        ...(take.length ? { take } : {}),
        ...(giveBack.length ? { return: giveBack } : {}),
      });
    } catch (error) {
      if (error instanceof TransportFailure) return ops.map(() => undefined);
      throw error;
    }
    const body = answer.body as { taken?: unknown; returned?: unknown } | null;
    const { taken, returned } = body ?? {};
    if (
      answer.status !== 200 ||
      !Array.isArray(taken) ||
      !Array.isArray(returned) ||
      taken.length !== take.length ||
      returned.length !== giveBack.length
    ) {
      // The whole batch refused (a 4xx each op shares) or no answer of memgate's (a 5xx, garbage).
      const whole =
        answer.status >= 400 && answer.status < 500 ? { status: answer.status, body: answer.body } : undefined;
      return ops.map(() => whole);
    }
    let t = 0;
    let r = 0;
    return ops.map((op) => {
      const item: unknown = op.kind === 'take' ? taken[t++] : returned[r++];
      const status = typeof item === 'object' && item !== null && 'status' in item ? item.status : undefined;
      if (typeof status === 'number') return { status, body: item };
      return { status: op.kind === 'take' && isDecision(item) && !item.allowed ? 429 : 200, body: item };
    });
  };

  const leaseBatcher = createBatcher<LeaseOp, LeaseOpOutcome>({
    windowMs: settings.batchWindowMs,
    maxSize: settings.maxBatchSize,
    send: sendLeaseOps,
  });

  /** A lease, a denial or a degraded answer; `off` for an event without leases. */
  const takeLease = async (event: string, feature: string, units: number): Promise<LeaseAnswer> => {
    if (!reachability.mayAsk()) return { kind: 'decision', decision: degraded() };
    stats.checksSent++;
    const answer = await leaseBatcher.add({ kind: 'take', event, feature, units });
    if (!answer) return { kind: 'decision', decision: settle({ kind: 'unreachable' }) };
    if (answer.status === 400 && serverError(answer.body)?.code === 'lease_off') {
      reachability.answered();
      return { kind: 'off' };
    }
    const decision = settle(outcomeOf(answer.status, answer.body, '/lease/batch'));
    const { lease, ...rest } = decision as ClientDecision & { lease?: Lease };
    return { kind: 'decision', decision: rest, lease };
  };

  /** Never rejects: a return memgate did not take leaves the units counted until they leave the window. */
  const giveLease = async (event: string, feature: string, id: string, unused: number): Promise<void> => {
    const answer = await leaseBatcher.add({ kind: 'return', event, feature, id, unused });
    if (answer?.status !== 200) stats.leaseReturnsLost++;
  };

  const leases =
    settings.leaseUnits > 0
      ? createLeases({
          units: settings.leaseUnits,
          marginMs: CLIENT_DEFAULTS.clientLeaseMarginMs,
          maxLeases: CLIENT_DEFAULTS.clientMaxLeases,
          // Monotonic, as the local denials': a wall clock stepped back would spend a lease past its life.
          now,
          take: takeLease,
          give: giveLease,
        })
      : undefined;

  /** A check memgate decides: from a lease's units when the client holds leases, else by /check. */
  const ask = async (body: CheckBody): Promise<Asked> => {
    // A lease is taken per event and feature, under the client's limits without a tier.
    if (!leases || body.tier !== undefined) return askCheck(body);
    const sentAt = now();
    const decision = await leases.decide(
      body.event,
      body.feature,
      body.cost ?? 1,
      async () => (await askCheck(body)).decision,
    );
    return { decision, sentAt };
  };

  const track = <T>(work: Promise<T>): Promise<T> => {
    underWay.add(work);
    void work.then(
      () => underWay.delete(work),
      () => underWay.delete(work),
    );
    return work;
  };

  const count = (decision: ClientDecision): ClientDecision => {
    if (decision.source === 'local') stats.answeredLocally++;
    if (decision.degraded) stats.degraded++;
    return decision;
  };

  const openOrThrow = () => {
    if (closed) throw new MemgateClientError('client_closed', 'memgate client: this client was closed');
  };

  const admin = async <T>(path: string, body: object): Promise<T> => {
    const token = settings.adminToken;
    if (token === undefined) {
      throw new MemgateClientError('admin_token_missing', `memgate client: ${path} needs the adminToken option`);
    }
    let answer: HttpAnswer;
    try {
      answer = await post(path, body, { authorization: `Bearer ${token}` });
    } catch (error) {
      if (error instanceof TransportFailure)
        throw new MemgateClientError('unreachable', `memgate client: ${error.message}`);
      throw error;
    }
    if (answer.status === 200) return answer.body as T;
    throw errorOf(answer.status, answer.body, path);
  };

  return {
    check(event, feature, checkOptions) {
      return track(
        (async () => {
          openOrThrow();
          const body = checkBody(event, feature, checkOptions);
          return count(await denials.decide(body.event, body.feature, body.cost ?? 1, () => ask(body), body.tier));
        })(),
      );
    },
    reserve(event, feature, units, reserveOptions) {
      return track(
        (async () => {
          openOrThrow();
          const { tier, ...rest } = checkBody(event, feature, reserveOptions);
          if (typeof units !== 'number' || !Number.isSafeInteger(units) || units < 1)
            throw new MemgateClientError(
              'invalid_cost',
              `memgate client: units must be a positive integer (got ${String(units)})`,
            );
          if (!reachability.mayAsk()) return count(degraded());
          let outcome: Outcome;
          try {
            const answer = await post('/check', { ...rest, reserve: units, ...(tier === undefined ? {} : { tier }) });
            outcome = outcomeOf(answer.status, answer.body, '/check');
          } catch (error) {
            if (!(error instanceof TransportFailure)) throw error;
            outcome = { kind: 'unreachable' };
          }
          return count(settle(outcome));
        })(),
      );
    },
    settle(event, feature, id, cost, reserveOptions) {
      return track(
        (async () => {
          openOrThrow();
          const { tier, ...rest } = checkBody(event, feature, reserveOptions);
          if (typeof id !== 'string' || id.length === 0)
            throw new MemgateClientError('unknown_reservation', 'memgate client: id must be the reservation’s id');
          if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 0)
            throw new MemgateClientError(
              'invalid_cost',
              `memgate client: cost must be a non-negative integer (got ${String(cost)})`,
            );
          let answer: HttpAnswer;
          try {
            answer = await post('/settle', { ...rest, id, cost, ...(tier === undefined ? {} : { tier }) });
          } catch (error) {
            if (error instanceof TransportFailure)
              throw new MemgateClientError('unreachable', `memgate client: ${error.message}`);
            throw error;
          }
          if (answer.status === 200) return answer.body as Settled;
          throw errorOf(answer.status, answer.body, '/settle');
        })(),
      );
    },
    release(event, feature, id) {
      return track(
        (async () => {
          openOrThrow();
          const body = checkBody(event, feature, {});
          if (typeof id !== 'string' || id.length === 0)
            throw new MemgateClientError('unknown_slot', 'memgate client: id must be the slot’s id');
          let answer: HttpAnswer;
          try {
            answer = await post('/release', { event: body.event, feature: body.feature, id });
          } catch (error) {
            if (error instanceof TransportFailure)
              throw new MemgateClientError('unreachable', `memgate client: ${error.message}`);
            throw error;
          }
          if (answer.status === 200) return answer.body as Released;
          throw errorOf(answer.status, answer.body, '/release');
        })(),
      );
    },
    peek(event, feature, checkOptions) {
      return track(
        (async () => {
          openOrThrow();
          const body = checkBody(event, feature, checkOptions);
          if (!reachability.mayAsk()) return count(degraded());
          let outcome: Outcome;
          try {
            const answer = await post('/peek', body);
            outcome = outcomeOf(answer.status, answer.body, '/peek');
          } catch (error) {
            if (!(error instanceof TransportFailure)) throw error;
            outcome = { kind: 'unreachable' };
          }
          return count(settle(outcome));
        })(),
      );
    },
    reset(event, feature) {
      return track(
        (async () => {
          openOrThrow();
          const { event: e, feature: f } = checkBody(event, feature, undefined);
          const answer = await admin<ResetAnswer>('/admin/reset', { event: e, feature: f });
          denials.forget(e, f);
          return answer;
        })(),
      );
    },
    refund(event, feature, refundOptions) {
      return track(
        (async () => {
          openOrThrow();
          const body = checkBody(event, feature, refundOptions);
          const at = (refundOptions as RefundOptions | undefined)?.at;
          if (typeof at !== 'number' || !Number.isSafeInteger(at) || at < 0) {
            throw new MemgateClientError(
              'invalid_at',
              `memgate client: refund needs at, the epoch milliseconds the check was counted (got ${String(at)})`,
            );
          }
          const answer = await admin<Refunded>('/admin/refund', { ...body, at });
          denials.forget(body.event, body.feature);
          return answer;
        })(),
      );
    },
    close() {
      // Once: a second close waits for the first.
      closing ??= (async () => {
        closed = true;
        while (underWay.size > 0) await Promise.allSettled([...underWay]);
        await leases?.returnAll();
        await transport.close();
      })();
      return closing;
    },
    get stats() {
      return { ...stats, leasesTaken: leases?.taken ?? 0, answeredFromLeases: leases?.spent ?? 0 };
    },
  };
}

/**
 * A check's body, refused here when memgate's schema would refuse it: in a batch such a
 * check would fail every other check with it (memgate judges the rest: unknown events,
 * long features, costs over a limit).
 */
function checkBody(event: unknown, feature: unknown, options: unknown): CheckBody {
  if (typeof event !== 'string' || event.length === 0) {
    throw new MemgateClientError(
      'invalid_event',
      `memgate client: event must be a non-empty string (got ${typeof event})`,
    );
  }
  if (typeof feature !== 'string' || feature.length === 0) {
    throw new MemgateClientError(
      'invalid_feature',
      `memgate client: feature must be a non-empty string (got ${typeof feature})`,
    );
  }
  if (!feature.isWellFormed()) {
    throw new MemgateClientError(
      'invalid_feature',
      'memgate client: feature must be well-formed Unicode (it holds a lone surrogate)',
    );
  }
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new MemgateClientError(
      'invalid_request',
      'memgate client: the options of a check must be an object such as { cost: 2 }',
    );
  }
  const { cost, tier } = (options as CheckOptions | undefined) ?? {};
  if (tier !== undefined && (typeof tier !== 'string' || tier.length === 0 || !tier.isWellFormed())) {
    throw new MemgateClientError(
      'invalid_tier',
      `memgate client: tier must be a non-empty string of well-formed Unicode (got ${typeof tier})`,
    );
  }
  const named = tier === undefined ? {} : { tier };
  if (cost === undefined) return { event, feature, ...named };
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1) {
    throw new MemgateClientError(
      'invalid_cost',
      `memgate client: cost must be a positive integer (got ${String(cost)})`,
    );
  }
  return { event, feature, cost, ...named };
}

function isDecision(body: unknown): body is Decision {
  return (
    typeof body === 'object' &&
    body !== null &&
    'allowed' in body &&
    typeof body.allowed === 'boolean' &&
    'limits' in body &&
    Array.isArray(body.limits)
  );
}

/** What memgate's answer to one check (or one element of a batch) means for it. */
function outcomeOf(status: number, body: unknown, path: string): Outcome {
  if ((status === 200 || status === 429) && isDecision(body)) return { kind: 'decision', decision: body };
  // 5xx (overloaded, shed, a proxy's 502) and answers that are no decision: memgate is not answering checks.
  if (status >= 500 || status < 400) return { kind: 'unreachable' };
  return { kind: 'error', error: errorOf(status, body, path) };
}

function errorOf(status: number, body: unknown, path: string): MemgateClientError {
  const error = serverError(body);
  return new MemgateClientError(
    error?.code ?? `http_${status}`,
    `memgate ${path}: ${error?.message ?? `answered ${status}`}`,
    status,
  );
}

/** The bytes of a batch's JSON body: counted only for batches whose features could be long. */
function batchBytes(checks: readonly CheckBody[]): number {
  // JSON writes a UTF-16 unit in at most 6 bytes (`\u0001`): most batches are below the limit by that bound alone.
  let most = 0;
  for (const check of checks) most += 64 + 6 * (check.feature.length + check.event.length);
  return most <= CLIENT_DEFAULTS.batchBodyLimitBytes ? most : new TextEncoder().encode(JSON.stringify(checks)).length;
}
