// A concurrency limit's slots: their keys, and the id of a request's slots, which names them
// and the random token they hold, so that only their holder can give them back.
import { randomInt } from 'node:crypto';
import { partKey } from '../../keys.js';

/** The key of slot `index` of a client (a concurrency limit of N has slots 0 to N − 1). */
export function slotKey(base: string, index: number): string {
  return partKey(base, 'slot', index);
}

/** A fresh token: 48 random bits, never 0 (a missing key reads 0), within what the store keeps exact. */
export function slotToken(): number {
  return randomInt(1, 2 ** 48);
}

/** The id a check answers: the slots it holds, and their token. */
export function slotId(indices: readonly number[], token: number): string {
  return `${indices.join('-')}.${token.toString(36)}`;
}

const SLOT_ID = /^(\d{1,7}(?:-\d{1,7}){0,99})\.([0-9a-z]{1,10})$/;

/** The slots and token an id names; undefined when it is not one memgate makes. */
export function parseSlotId(id: unknown): { indices: number[]; token: number } | undefined {
  const match = typeof id === 'string' ? SLOT_ID.exec(id) : null;
  if (!match) return undefined;
  const token = Number.parseInt(match[2] as string, 36);
  if (!Number.isSafeInteger(token) || token < 1 || token >= 2 ** 48) return undefined;
  return { indices: (match[1] as string).split('-').map(Number), token };
}
