/**
 * Which rule of a policy applies to a client (issue 26: per-client overrides, allow and deny
 * lists): rules name one client (`feature`), every client whose name starts with a string
 * (`prefix`), or every address in a network (`cidr`, IPv4 or IPv6). The most specific wins:
 * the exact name; else the narrowest network holding the feature, when it is an IP address;
 * else the longest prefix. Two rules of one kind never tie: the same name, network or prefix
 * twice is refused when the file is read, an address however it is written (`::ffff:10.9.9.9`
 * and `10.9.9.9` are one client: shared/client-address.ts). Features reach `match` in that one
 * spelling too (counting/resolve.ts), so an exact rule and a network hold the same clients.
 */
import ipaddr from 'ipaddr.js';
import { canonicalFeature } from '../shared/client-address.js';
import { MAX_FEATURE_BYTES } from '../shared/feature-name.js';

export type ClientMatch =
  | { readonly feature: string }
  | { readonly prefix: string }
  | { readonly cidr: string };

export interface MatchRule<T> {
  readonly match: ClientMatch;
  readonly value: T;
}

const KINDS = ['feature', 'prefix', 'cidr'] as const;

/**
 * A rule's `match` as the policy file writes it (`{ feature: x }`, `{ prefix: x }` or
 * `{ cidr: x }`), or undefined with each problem pushed, worded for the person who wrote it.
 */
export function parseClientMatch(raw: unknown, where: string, problems: string[]): ClientMatch | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    problems.push(`${where}: must be one of { feature: NAME }, { prefix: TEXT } or { cidr: NETWORK }`);
    return undefined;
  }
  const given = KINDS.filter((kind) => kind in raw);
  const unknown = Object.keys(raw).filter((key) => !(KINDS as readonly string[]).includes(key));
  if (unknown.length > 0) problems.push(`${where}: unknown key ${unknown.map((key) => `"${key}"`).join(', ')}; a match takes feature, prefix or cidr`);
  if (given.length !== 1) {
    problems.push(`${where}: give exactly one of feature, prefix or cidr (got ${given.length === 0 ? 'none' : given.join(' and ')})`);
    return undefined;
  }
  const kind = given[0] as (typeof KINDS)[number];
  const value = (raw as Record<string, unknown>)[kind];
  if (typeof value !== 'string' || value === '') {
    problems.push(`${where}.${kind}: must be a non-empty string`);
    return undefined;
  }
  if (Buffer.byteLength(value) > MAX_FEATURE_BYTES) {
    problems.push(`${where}.${kind}: at most ${MAX_FEATURE_BYTES} bytes, as a feature (got ${Buffer.byteLength(value)})`);
    return undefined;
  }
  if (kind === 'cidr') {
    const network = parseNetwork(value);
    if (!network) {
      problems.push(`${where}.cidr: must be a network such as 203.0.113.0/24 or 2001:db8::/48 (got ${JSON.stringify(value)})`);
      return undefined;
    }
    return { cidr: network.text };
  }
  // A feature is matched in its one spelling, as every request's is (resolve.ts): `2001:DB8::7`
  // and `::ffff:10.9.9.9` in a file match the clients they name, and name them once.
  return kind === 'feature' ? { feature: canonicalFeature(value) } : { prefix: value };
}

/** The match's kind and key in its one spelling, for messages: `cidr 10.0.0.0/8`. */
export function describeMatch(match: ClientMatch): string {
  if ('feature' in match) return `feature ${JSON.stringify(match.feature)}`;
  if ('prefix' in match) return `prefix ${JSON.stringify(match.prefix)}`;
  return `cidr ${match.cidr}`;
}

interface Network {
  readonly address: ipaddr.IPv4 | ipaddr.IPv6;
  readonly bits: number;
  /** Normalised: the network's first address and its length, `10.0.0.0/8`. */
  readonly text: string;
}

function parseNetwork(text: string): Network | undefined {
  const [address = ''] = text.split('/');
  if (!address.includes(':') && !ipaddr.IPv4.isValidFourPartDecimal(address)) return undefined;
  if (!ipaddr.isValidCIDR(text)) return undefined;
  const [parsed, bits] = ipaddr.parseCIDR(text);
  const inner = unmapped(parsed);
  const kindBits = inner.kind() === 'ipv4' ? 32 : 128;
  // ::ffff:10.0.0.0/104 is 10.0.0.0/8.
  const length = parsed.kind() === 'ipv6' && inner.kind() === 'ipv4' ? bits - 96 : bits;
  if (length < 0 || length > kindBits) return undefined;
  const first = ipaddr.fromByteArray(
    inner.toByteArray().map((byte, index) => {
      const kept = Math.max(0, Math.min(8, length - index * 8));
      return byte & ((0xff << (8 - kept)) & 0xff);
    }),
  );
  return { address: first, bits: length, text: `${first.toString()}/${length}` };
}

/** An IPv4-mapped IPv6 address (`::ffff:10.1.2.3`) as the IPv4 address it carries. */
function unmapped(address: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()
    ? (address as ipaddr.IPv6).toIPv4Address()
    : address;
}

/**
 * An address as clients are named by: dotted IPv4 or IPv6, not ipaddr.js's other IPv4 forms
 * (`10` would be 0.0.0.10: a user id is not an address).
 */
function isAddress(feature: string): boolean {
  // ipaddr.js takes ~13 µs to refuse a name such as a user id: a cheap shape test first.
  if (DOTTED_QUAD.test(feature)) return ipaddr.IPv4.isValidFourPartDecimal(feature);
  return feature.includes(':') && ipaddr.IPv6.isValid(feature);
}

const DOTTED_QUAD = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;

/**
 * The network a feature names: an address as a network of its full length, or a network as
 * memgate writes one for an IPv6 client counted by its prefix (`2001:db8:0:1200::/56`, see
 * shared/client-address.ts), so that a rule for 2001:db8::/32 holds /gate's IPv6 clients too.
 */
function featureNetwork(feature: string): Network | undefined {
  if (isAddress(feature)) {
    const address = unmapped(ipaddr.parse(feature));
    return { address, bits: address.kind() === 'ipv4' ? 32 : 128, text: feature };
  }
  return feature.includes('/') && feature.includes(':') ? parseNetwork(feature) : undefined;
}

/** Clients never limited (`allow`) and always refused (`deny`), as the file lists them. */
export interface ClientLists {
  readonly allow: readonly ClientMatch[];
  readonly deny: readonly ClientMatch[];
}

/**
 * parseClientMatch's problems ("match.cidr: must be …") at their field's path: under `at`'s
 * `match`, or at `at` itself when the entry is the match (`root`, a list's entry).
 */
export function reportMatchProblems(
  problems: readonly string[],
  at: readonly string[],
  report: (path: readonly string[], text: string) => void,
  { root = false } = {},
): void {
  for (const problem of problems) {
    const [, kind, text = problem] = /^match(?:\.([a-z]+))?: (.*)$/s.exec(problem) ?? [];
    report([...at, ...(root ? [] : ['match']), ...(kind ? [kind] : [])], text);
  }
}

/**
 * An event's (or the gateway's) allow and deny lists, or undefined when any entry is faulty;
 * `report` takes each fault with its path under the event (or gateway).
 */
export function parseClientLists(
  raw: { readonly allow?: unknown; readonly deny?: unknown },
  report: (path: readonly string[], text: string) => void,
): ClientLists | undefined {
  const lists = { allow: [] as ClientMatch[], deny: [] as ClientMatch[] };
  let faulty = false;
  for (const list of ['allow', 'deny'] as const) {
    const entries = raw[list];
    if (entries === undefined) continue;
    // Not a list: the schema has said so already.
    if (!Array.isArray(entries)) {
      faulty = true;
      continue;
    }
    entries.forEach((entry, index) => {
      const problems: string[] = [];
      const match = parseClientMatch(entry, 'match', problems);
      reportMatchProblems(problems, [list, String(index)], report, { root: true });
      if (match) lists[list].push(match);
      else faulty = true;
    });
  }
  for (const twice of duplicateMatches([...lists.allow, ...lists.deny])) {
    report(['deny'], `${twice.text} is listed more than once (in allow, deny or both)${twice.note}; list each client once`);
    faulty = true;
  }
  return faulty ? undefined : lists;
}

/** Which list holds a client, the most specific entry of either winning; undefined when none does or no entry exists. */
export function listMatcher(lists: ClientLists | undefined): FeatureMatcher<'allow' | 'deny'> | undefined {
  if (!lists || (lists.allow.length === 0 && lists.deny.length === 0)) return undefined;
  return new FeatureMatcher<'allow' | 'deny'>([
    ...lists.allow.map((match) => ({ match, value: 'allow' as const })),
    ...lists.deny.map((match) => ({ match, value: 'deny' as const })),
  ]);
}

/** For a message about two rules naming one client: an address is one however it is written. */
export function sameClientNote(match: ClientMatch): string {
  return 'feature' in match && (isAddress(match.feature) || match.feature.includes(':'))
    ? ' (an address is one client however it is written: IPv6 in lower case and compressed, an IPv4-mapped address as IPv4)'
    : '';
}

/** Refuses rules of one kind with the same key: which would apply would be a guess. */
export function duplicateMatches(matches: readonly ClientMatch[]): { text: string; note: string }[] {
  const seen = new Set<string>();
  const twice: { text: string; note: string }[] = [];
  for (const match of matches) {
    const key = describeMatch(match);
    if (seen.has(key)) twice.push({ text: key, note: sameClientNote(match) });
    seen.add(key);
  }
  return twice;
}

/** The most specific rule's value for a feature, as the file's rules say (see the module comment). */
export class FeatureMatcher<T> {
  readonly #exact = new Map<string, T>();
  /**
   * Prefixes by length, longest first: a feature is looked up once per distinct length, so
   * ten thousand prefix rules cost a check a few map lookups, not ten thousand comparisons.
   */
  readonly #prefixes: { readonly length: number; readonly rules: Map<string, T> }[] = [];
  /** Networks by kind and length, narrowest first, keyed by their masked address. */
  readonly #networks: { readonly kind: 'ipv4' | 'ipv6'; readonly bits: number; readonly rules: Map<string, T> }[] = [];

  constructor(rules: readonly MatchRule<T>[]) {
    const prefixes = new Map<number, Map<string, T>>();
    const networks = new Map<string, { kind: 'ipv4' | 'ipv6'; bits: number; rules: Map<string, T> }>();
    for (const { match, value } of rules) {
      if ('feature' in match) this.#exact.set(match.feature, value);
      else if ('prefix' in match) {
        const length = match.prefix.length;
        if (!prefixes.has(length)) prefixes.set(length, new Map());
        prefixes.get(length)?.set(match.prefix, value);
      } else {
        const network = parseNetwork(match.cidr);
        if (!network) throw new RangeError(`not a network: ${match.cidr}`);
        const kind = network.address.kind();
        const group = `${kind}/${network.bits}`;
        if (!networks.has(group)) networks.set(group, { kind, bits: network.bits, rules: new Map() });
        networks.get(group)?.rules.set(maskedKey(network.address, network.bits), value);
      }
    }
    for (const [length, byPrefix] of prefixes) this.#prefixes.push({ length, rules: byPrefix });
    this.#prefixes.sort((a, b) => b.length - a.length);
    this.#networks.push(...networks.values());
    this.#networks.sort((a, b) => b.bits - a.bits);
  }

  /** Whether any rule exists: a policy without rules costs a check nothing. */
  get empty(): boolean {
    return this.#exact.size === 0 && this.#prefixes.length === 0 && this.#networks.length === 0;
  }

  /**
   * The most specific rule's value for `feature`; with `applies`, the most specific of those
   * whose value it accepts (an override past its `until` gives way to the next one).
   */
  match(feature: string, applies?: (value: T) => boolean): T | undefined {
    const exact = this.#exact.get(feature);
    if (exact !== undefined && (!applies || applies(exact))) return exact;
    if (this.#networks.length > 0) {
      const held = featureNetwork(feature);
      if (held) {
        const kind = held.address.kind();
        for (const { kind: ruleKind, bits, rules } of this.#networks) {
          // A network feature lies within a rule only if it is no wider than the rule.
          if (ruleKind !== kind || bits > held.bits) continue;
          const value = rules.get(maskedKey(held.address, bits));
          if (value !== undefined && (!applies || applies(value))) return value;
        }
      }
    }
    for (const { length, rules } of this.#prefixes) {
      if (length > feature.length) continue;
      const value = rules.get(feature.slice(0, length));
      if (value !== undefined && (!applies || applies(value))) return value;
    }
    return undefined;
  }
}

/** An address's first `bits` bits, as a key: the network of that length holding it. */
function maskedKey(address: ipaddr.IPv4 | ipaddr.IPv6, bits: number): string {
  return address
    .toByteArray()
    .map((byte, index) => byte & ((0xff << (8 - Math.max(0, Math.min(8, bits - index * 8)))) & 0xff))
    .join('.');
}
