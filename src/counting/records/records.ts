// Records kept after a decision: what a lease or a reservation counted, under an id only its
// holder knows, for the one return or settle that moves it. A record is written once the step
// has counted (so a decision stays a decision), and claimed at most once, within its hold.
import { randomFillSync } from 'node:crypto';
import { StoreUnavailableError } from '../../store/counter-store.js';
import { partOf } from '../algorithms/parts.js';
import type { Context } from '../context.js';
import { LimiterInputError } from '../errors.js';
import { recordClaimsKey, recordTimeKey, resetMarkerKey } from '../keys.js';
import type { EventPlan } from '../plan-types.js';
import type { Counted } from '../step.js';

/** What stays of a record past its hold, for a late duplicate return or settle to find it claimed. */
export const RECORD_SLACK_SECONDS = 60;

/**
 * A record's id: the second its units were counted at (their buckets), and 128 random bits
 * drawn when it was made (its token), so that a claim names a record only its holder knows.
 */
export function recordId(second: number, token: string): string {
  return `${second}.${token}`;
}

const TOKEN_BYTES = 16;
/**
 * Random bytes drawn 256 tokens at a time, as crypto.randomUUID pools them: one draw per
 * token took a fifth of a denied lease's CPU.
 */
const tokenPool = Buffer.alloc(TOKEN_BYTES * 256);
let nextToken = tokenPool.length;

/** The random part of a record's id: 128 bits from the system's CSPRNG. */
export function recordToken(): string {
  if (nextToken === tokenPool.length) {
    randomFillSync(tokenPool);
    nextToken = 0;
  }
  const token = tokenPool.toString('base64url', nextToken, nextToken + TOKEN_BYTES);
  nextToken += TOKEN_BYTES;
  return token;
}

const RECORD_ID = /^([0-9]{1,12})\.([A-Za-z0-9_-]{22})$/;

/** The second a record was counted at, from its id; `code` when the id is not one memgate makes. */
export function recordedSecond(id: unknown, code: 'unknown_lease' | 'unknown_reservation'): number {
  const match = typeof id === 'string' ? RECORD_ID.exec(id) : null;
  if (!match)
    throw new LimiterInputError(
      code,
      `the ${code === 'unknown_lease' ? 'lease' : 'reservation'} id is not one memgate gave`,
    );
  return Number(match[1]);
}

/** What a claim says of the record it claims, in its codes and words. */
export interface RecordWords {
  readonly unknown: 'unknown_lease' | 'unknown_reservation';
  readonly expired: 'lease_expired' | 'reservation_expired';
  readonly done: 'lease_returned' | 'reservation_settled';
  /** `lease`, `reservation`. */
  readonly noun: string;
  /** `taken`, `made`. */
  readonly made: string;
  /** `returned`, `settled`. */
  readonly claimed: string;
  /** What happens to its units when it is not claimed in time. */
  readonly unclaimed: string;
}

/** A record written: its id and units, and when they were counted. */
export interface Recorded {
  readonly id: string;
  readonly units: number;
  readonly countedAtMs: number;
}

/**
 * What becomes of what the step counted when its record cannot be written: `undo` takes it
 * back and fails as the store failing (a lone lease or reservation: its caller asks again);
 * `keep` leaves it counted as a plain check, with no record (a request of several checks,
 * whose others stay counted).
 */
export type Unrecorded = 'undo' | 'keep';

/** Writes the record of what the step counted for `plan`'s client, under a new id; undefined when kept unrecorded. */
export async function writeRecord(
  context: Context,
  plan: EventPlan,
  base: string,
  counted: Counted,
  { ttlSeconds, unrecorded }: { ttlSeconds: number; unrecorded: Unrecorded },
): Promise<Recorded | undefined> {
  const part = partOf(plan);
  const second = Math.floor(counted.atMs / 1000);
  const id = recordId(second, recordToken());
  const units = part.recordKey(plan, base, id);
  // The time the units stand for at this client's rate now (a token bucket's): its settle gives back exactly that.
  const us = part.recordedTime(plan, counted.cost);
  try {
    await context.store.incrementAndRead(
      [
        { key: units, delta: counted.cost, ttlSeconds },
        ...(us === undefined ? [] : [{ key: recordTimeKey(units), delta: us, ttlSeconds }]),
      ],
      [],
    );
  } catch (error) {
    if (!(error instanceof StoreUnavailableError)) throw error;
    if (unrecorded === 'keep') return undefined;
    await part
      .recount(context, plan, base, { now: second, count: 0, second, takeBack: counted.cost })
      .catch((undo: unknown) => context.onRollbackError?.(undo));
    throw error;
  }
  return { id, units: counted.cost, countedAtMs: counted.atMs };
}

/** What the holder is told of its record: the id to claim it by, its units, and when it lapses. */
export function heldRecord(
  record: Recorded,
  lifeSeconds: number,
): { id: string; units: number; seconds: number; expiresAt: number } {
  return {
    id: record.id,
    units: record.units,
    seconds: lifeSeconds,
    expiresAt: Math.floor(record.countedAtMs) + lifeSeconds * 1000,
  };
}

/** A record claimed: its units, the time recorded for them, whether a reset forgot them, its second and now's. */
export interface Claimed {
  readonly units: number;
  readonly us: number | undefined;
  readonly forgotten: boolean;
  readonly second: number;
  readonly now: number;
}

/**
 * Claims the one return or settle of the units recorded under `id`, within its hold.
 * Counting the claim first makes it the only one, however many arrive at once.
 */
export async function claimRecord(
  context: Context,
  plan: EventPlan,
  base: string,
  id: string,
  { holdSeconds, words }: { holdSeconds: number; words: RecordWords },
): Promise<Claimed> {
  const second = recordedSecond(id, words.unknown);
  const now = Math.floor(context.now(base) / 1000);
  if (second > now + context.skewSeconds)
    throw new LimiterInputError(words.unknown, `the ${words.noun} id is not one memgate gave`);
  if (now > second + holdSeconds)
    throw new LimiterInputError(
      words.expired,
      `the ${words.noun} was ${words.made} ${now - second} s ago, past its life and the grace for it to be ${words.claimed} (${holdSeconds} s); ${words.unclaimed}`,
    );
  const unitsKey = partOf(plan).recordKey(plan, base, id);
  const { incremented, read } = await context.store.incrementAndRead(
    [{ key: recordClaimsKey(base, id), delta: 1, ttlSeconds: holdSeconds + RECORD_SLACK_SECONDS }],
    [unitsKey, resetMarkerKey(base), recordTimeKey(unitsKey)],
  );
  const units = read[0] ?? 0;
  if (units === 0) throw new LimiterInputError(words.unknown, `no ${words.noun} of this id for this event and feature`);
  if ((incremented[0] ?? 0) > 1)
    throw new LimiterInputError(words.done, `the ${words.noun} was ${words.claimed} already`);
  const us = read[2] ?? 0;
  return { units, us: us > 0 ? us : undefined, forgotten: (read[1] ?? 0) >= second, second, now };
}

/** Gives back a claim whose work failed, so that the return or settle can be sent again. */
export async function unclaimRecord(context: Context, base: string, id: string): Promise<void> {
  await context.store.decrement([{ key: recordClaimsKey(base, id), delta: 1 }]);
}
