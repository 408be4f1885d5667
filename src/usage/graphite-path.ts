/**
 * Where usage lives in Graphite's tree, and how an event's or a client's name, any string,
 * becomes one node of it and back.
 *
 *   memgate[.<instance>].<event>.<outcome>
 *   memgate[.<instance>].<event>.clients.<client>.<outcome>
 *
 * An event's outcomes are allowed, denied, degraded and shadow_denied (usage-store.ts's
 * OUTCOMES), and beside them its settled reservations, settled and settled_cost (SETTLED); a
 * client's, allowed and denied.
 */
import type { EventCount, Outcome } from './usage-store.js';

/** The first node of every path memgate writes. */
export const ROOT = 'memgate';

/** The node under an event that holds its heaviest clients. */
export const CLIENTS = 'clients';

/** What MEMGATE_GRAPHITE_INSTANCE may be: one node, written as is. */
export const INSTANCE_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The longest node carbon can store: each node is a directory or file name of whisper's,
 * and file systems refuse names longer than 255 bytes (NAME_MAX).
 */
export const MAX_NODE_BYTES = 255;

/** The node of the empty string, which has no byte to write: `_` alone is no escape. */
const EMPTY = '_';

const UNDERSCORE = 0x5f;

/** Bytes kept as they are: `[A-Za-z0-9-]`, which every part of Graphite reads as plain node text. */
function kept(byte: number): boolean {
  return (
    (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || byte === 0x2d
  );
}

/**
 * One node for any string: `[A-Za-z0-9-]` kept, every other UTF-8 byte written `_` and two
 * lowercase hex digits (`alice@example.com` → `alice_40example_2ecom`, `_` → `_5f`). Dots,
 * colons, spaces, `*` and braces mean something to Graphite; none is left. A lone
 * surrogate has no UTF-8 and is written as U+FFFD (memgate refuses such features).
 */
export function encodeNode(text: string): string {
  if (text === '') return EMPTY;
  let node = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    node += kept(byte) ? String.fromCharCode(byte) : `_${byte.toString(16).padStart(2, '0')}`;
  }
  return node;
}

/**
 * The string `encodeNode` wrote as `node`, or undefined when no string encodes to it (a
 * node some other writer put under `memgate`): each string has exactly one node.
 */
export function decodeNode(node: string): string | undefined {
  if (node === EMPTY) return '';
  if (node === '') return undefined; // a path has no empty node
  const bytes: number[] = [];
  for (let index = 0; index < node.length;) {
    const code = node.charCodeAt(index);
    if (code === UNDERSCORE) {
      const hex = node.slice(index + 1, index + 3);
      const byte = Number.parseInt(hex, 16);
      // Lowercase only, and never a kept byte: encodeNode writes each byte one way.
      if (!/^[0-9a-f]{2}$/.test(hex) || kept(byte)) return undefined;
      bytes.push(byte);
      index += 3;
    } else if (kept(code)) {
      bytes.push(code);
      index += 1;
    } else return undefined;
  }
  try {
    // ignoreBOM: a leading U+FEFF is part of the name.
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(Uint8Array.from(bytes));
  } catch {
    return undefined;
  }
}

/** Whether carbon can store the node of `text`: see MAX_NODE_BYTES. */
export function storable(text: string): boolean {
  return encodeNode(text).length <= MAX_NODE_BYTES;
}

/**
 * The paths one MEMGATE_GRAPHITE_INSTANCE writes and the patterns reads match. Unset, one
 * tree for every instance (instances writing the same second overwrite each other); set,
 * each instance writes under a node of its own and reads sum over `memgate.*`.
 */
export class GraphiteLayout {
  /** `memgate` or `memgate.<instance>`: what this instance writes under. */
  readonly #writeRoot: string;
  /** `memgate` or `memgate.*`: what reads match. */
  readonly readRoot: string;
  /** Whether a read matches several instances' series, to be summed into one. */
  readonly summed: boolean;
  /** The position of the client node in a client's path, counting from 0. */
  readonly clientIndex: number;

  constructor(instance: string | undefined) {
    if (instance !== undefined && !INSTANCE_PATTERN.test(instance)) {
      throw new RangeError(
        `a Graphite instance is 1 to 64 letters, digits, "_" or "-" (got ${JSON.stringify(instance)})`,
      );
    }
    this.#writeRoot = instance === undefined ? ROOT : `${ROOT}.${instance}`;
    this.readRoot = instance === undefined ? ROOT : `${ROOT}.*`;
    this.summed = instance !== undefined;
    this.clientIndex = instance === undefined ? 3 : 4;
  }

  /** Where this instance writes an event's count of one outcome (or of its settles). */
  eventPath(event: string, outcome: EventCount): string {
    return `${this.#writeRoot}.${encodeNode(event)}.${outcome}`;
  }

  /** Where this instance writes a client's count of one outcome. */
  clientPath(event: string, feature: string, outcome: Outcome): string {
    return `${this.#writeRoot}.${encodeNode(event)}.${CLIENTS}.${encodeNode(feature)}.${outcome}`;
  }

  /** What a read of an event's outcome (or settles) matches: every instance's series when summed. */
  eventPattern(event: string, outcome: EventCount): string {
    return `${this.readRoot}.${encodeNode(event)}.${outcome}`;
  }

  /** What a read of one client (every client: undefined) matches; `outcomes` may be a `{a,b}` pattern. */
  clientPattern(event: string, feature: string | undefined, outcomes: string): string {
    const client = feature === undefined ? '*' : encodeNode(feature);
    return `${this.readRoot}.${encodeNode(event)}.${CLIENTS}.${client}.${outcomes}`;
  }

  /** What /metrics/find is asked for the event nodes. */
  get eventsQuery(): string {
    return `${this.readRoot}.*`;
  }
}
