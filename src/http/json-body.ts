// Reads a JSON body with its cost bounded before JSON.parse runs. Bytes are bounded per route by
// fastify's bodyLimit; what a parse costs beyond the bytes is the values it builds, so one pass
// over the bytes counts nesting and values first and refuses a body no memgate request needs
// (1.4 MB of nested arrays took 126 ms to parse). The same pass finds text that is not UTF-8,
// which decoding would turn into U+FFFD so that two different features shared one counter.
import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DEFAULTS } from '../config/defaults.js';
import type { ErrorCode } from '../config/error-codes.js';

/**
 * A body refused before it was parsed, with the code and message it is answered with. No
 * stack: the client's fault, answered and never logged, and floods of them are what it meets.
 */
export class JsonBodyError extends Error {
  override readonly name = 'JsonBodyError';
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
  }
}

export interface JsonShapeLimits {
  /** Arrays and objects inside one another: memgate's deepest request (/lease/batch) needs 3. */
  readonly maxDepth: number;
  /** Values in the whole body, counted by the commas between them. */
  readonly maxValues: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/**
 * Why a body's shape is beyond the limits, or undefined when it is within them. Not a JSON
 * validator: a body it lets through may still be broken JSON, which JSON.parse then says.
 */
export function jsonShapeProblem(bytes: Uint8Array, limits: JsonShapeLimits): JsonBodyError | undefined {
  let depth = 0;
  let values = 1;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (byte === QUOTE) {
      i = stringEnd(bytes, i);
      continue;
    }
    if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      if (++depth > limits.maxDepth) {
        return new JsonBodyError(
          'invalid_request',
          `the JSON body nests arrays and objects more than ${limits.maxDepth} deep; memgate's requests need at most 3`,
        );
      }
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) depth--;
    else if (byte === COMMA && ++values > limits.maxValues) {
      return new JsonBodyError(
        'payload_too_large',
        `the JSON body holds more than ${limits.maxValues} values; a full batch needs fewer (split it)`,
      );
    }
  }
  return undefined;
}

/**
 * The index of the quote that closes the string opened at `start` (the end of the bytes when
 * none does). Strings are most of a body's bytes: they are skipped by the native search for
 * the next quote, which is the end unless an odd run of backslashes escapes it. UTF-8 never
 * uses these two bytes inside a character, so bytes are enough.
 */
function stringEnd(bytes: Uint8Array, start: number): number {
  let quote = start;
  for (let escaped = 0; ;) {
    quote = bytes.indexOf(QUOTE, quote + 1);
    if (quote === -1) return bytes.length;
    let backslashes = 0;
    while (bytes[quote - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
    // Escaped quotes close together (a string of `\"`s): one native search each costs more
    // than looking at the bytes.
    if (++escaped === ESCAPED_QUOTES_BEFORE_BYTES) return stringEndByBytes(bytes, quote + 1);
  }
}

/** Escaped quotes in one string after which stringEnd reads it byte by byte. */
const ESCAPED_QUOTES_BEFORE_BYTES = 8;

/** stringEnd, from `from` inside a string, one byte at a time: a backslash escapes the next byte. */
function stringEndByBytes(bytes: Uint8Array, from: number): number {
  for (let i = from; i < bytes.length; i++) {
    const byte = bytes[i];
    if (byte === BACKSLASH) i++;
    else if (byte === QUOTE) return i;
  }
  return bytes.length;
}

/** `\udc80` as JSON writes it: a lone surrogate, which no well-formed text holds. */
const NOT_UTF8_MARK = Buffer.from('\\udc80');

/**
 * The body as text, each string whose bytes are not UTF-8 starting with a lone surrogate: the
 * field it lands in is then refused as not well-formed (invalid_feature, invalid_event, or an
 * unknown field for a key), by the same check as a lone surrogate sent as `\ud800`, instead of
 * every bad byte becoming U+FFFD.
 */
export function markNotUtf8Strings(bytes: Buffer): string {
  if (isUtf8(bytes)) return bytes.toString('utf8');
  const parts: Buffer[] = [];
  let copied = 0;
  for (let i = bytes.indexOf(QUOTE); i !== -1 && i < bytes.length; i = bytes.indexOf(QUOTE, i + 1)) {
    const end = stringEnd(bytes, i);
    if (!isUtf8(bytes.subarray(i + 1, end))) {
      parts.push(bytes.subarray(copied, i + 1), NOT_UTF8_MARK);
      copied = i + 1;
    }
    i = end;
  }
  parts.push(bytes.subarray(copied));
  // Bytes outside strings that are not UTF-8 become U+FFFD here, and JSON.parse refuses them.
  return Buffer.concat(parts).toString('utf8');
}

/**
 * The key that would poison an object's prototype if the value were merged into another
 * (`__proto__`, or `constructor` holding `prototype`), or undefined. fastify's parser refuses
 * them by two regular expressions over the whole text; after the checks above the parsed value
 * holds at most jsonMaxValues values, and walking them is cheaper.
 */
export function poisonedKey(value: unknown): string | undefined {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next !== 'object' || next === null) continue;
    if (Array.isArray(next)) {
      pending.push(...(next as unknown[]));
      continue;
    }
    if (Object.hasOwn(next, '__proto__')) return '__proto__';
    const named = next as Record<string, unknown>;
    if (Object.hasOwn(named, 'constructor')) {
      const inner = (named as { constructor?: unknown }).constructor;
      if (typeof inner === 'object' && inner !== null && Object.hasOwn(inner, 'prototype'))
        return 'constructor.prototype';
    }
    pending.push(...Object.values(named));
  }
  return undefined;
}

// fastify's own messages, which clients and the OpenAPI examples already show.
const EMPTY_BODY = "Body cannot be empty when content-type is set to 'application/json'";
const NOT_JSON = "Body is not valid JSON but content-type is set to 'application/json'";

/**
 * Replaces fastify's JSON parser with one that refuses, before parsing, what no memgate request
 * holds, marks text that is not UTF-8 as sent, and refuses keys that would poison a prototype.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  const limits: JsonShapeLimits = { maxDepth: DEFAULTS.jsonMaxDepth, maxValues: DEFAULTS.jsonMaxValues };
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer' },
    (_request: FastifyRequest, body: Buffer | string, done: Done) => {
      const bytes = typeof body === 'string' ? Buffer.from(body) : body;
      if (bytes.length === 0) {
        done(new JsonBodyError('invalid_json', EMPTY_BODY));
        return;
      }
      // A large body (a big batch) is read in steps, the event loop free between them.
      if (bytes.length > DEFAULTS.jsonStepAboveBytes) {
        readInSteps(bytes, limits, done);
        return;
      }
      // Every other body at once, allocating nothing more: this is every POST /check.
      const problem = jsonShapeProblem(bytes, limits);
      if (problem) {
        done(problem);
        return;
      }
      const value = parsedBody(bytes);
      if (value instanceof JsonBodyError) done(value);
      else done(poisonedBody(value) ?? null, value);
    },
  );
}

type Done = (error: Error | null, value?: unknown) => void;

/** The body as JSON, or invalid_json (JSON.parse never gives an Error instance). */
function parsedBody(bytes: Buffer): unknown {
  try {
    return JSON.parse(markNotUtf8Strings(bytes)) as unknown;
  } catch {
    return new JsonBodyError('invalid_json', NOT_JSON);
  }
}

function poisonedBody(value: unknown): JsonBodyError | undefined {
  const poisoned = poisonedKey(value);
  return poisoned === undefined
    ? undefined
    : new JsonBodyError('invalid_json', `the body holds a "${poisoned}" key, which memgate refuses`);
}

/** The same three steps, each in its own turn of the event loop. */
function readInSteps(bytes: Buffer, limits: JsonShapeLimits, done: Done): void {
  // Out of fastify's own try: a throw is answered, not left uncaught.
  const later = (step: () => void) => {
    setImmediate(() => {
      try {
        step();
      } catch (error) {
        done(error instanceof Error ? error : new Error(String(error)));
      }
    });
  };
  const problem = jsonShapeProblem(bytes, limits);
  if (problem) {
    done(problem);
    return;
  }
  later(() => {
    const value = parsedBody(bytes);
    if (value instanceof JsonBodyError) {
      done(value);
      return;
    }
    later(() => {
      done(poisonedBody(value) ?? null, value);
    });
  });
}
