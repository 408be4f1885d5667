import { CLIENT_DEFAULTS } from './defaults.js';

/**
 * The one spelling of a feature (issue 38, "one client, one name"): a client named by an IP
 * address is one client however the address is written, so every surface counts it under one
 * key and every rule naming it matches it. An IPv6 address is written lower-case and
 * compressed (RFC 5952: `2001:DB8:0:0::7` is `2001:db8::7`), an IPv4-mapped one as the IPv4
 * address it carries (`::ffff:10.9.9.9` is `10.9.9.9`, as a dual-stack proxy writes clients),
 * and an IPv6 network as memgate writes a client counted by its prefix (`2001:db8:0:1200::/56`,
 * see clientAddressFeature) by its first address and length. Anything else is returned as it
 * is: a user id, an e-mail, a dotted IPv4 address (it has one spelling: memgate takes no
 * leading zeros, `010.1.2.3` is a name), an address with a zone (`fe80::1%eth0`).
 */
export function canonicalFeature(feature: string): string {
  // Every check comes here: most features (names, IPv4 addresses) have no colon, and are done.
  if (!feature.includes(':')) return feature;
  const slash = feature.indexOf('/');
  const words = ipv6Words(feature, slash === -1 ? feature.length : slash);
  if (!words) return feature;
  if (slash === -1) {
    const text = isIpv4Mapped(words) ? ipv4Text(words) : ipv6Text(words);
    // Already in its one spelling (the common case): the string the caller holds.
    return text === feature ? feature : text;
  }
  const bits = prefixBits(feature, slash + 1);
  // An IPv4 network written as IPv6 is not a client memgate names: left as it is.
  if (bits === undefined || isIpv4Mapped(words)) return feature;
  return `${ipv6Text(masked(words, bits))}/${bits}`;
}

/**
 * How a client address is counted, where memgate takes the address itself (/gate's client-ip,
 * the express and fastify entries): in its one spelling (canonicalFeature), an IPv6 address by
 * its network of `ipv6Subnet` bits, written `2001:db8:0:1200::/56`, since one customer can use
 * every address of its prefix. `false` (or 128) counts each IPv6 address alone. A zone
 * (`%eth0`) names this host's interface, not the client: it is dropped. Anything that is not
 * an IP address is returned as it is: the caller decides whether to refuse it.
 */
export function clientAddressFeature(address: string, ipv6Subnet: number | false = CLIENT_DEFAULTS.ipv6Subnet): string {
  if (!address.includes(':')) return address;
  const zone = address.indexOf('%');
  const words = ipv6Words(address, zone === -1 ? address.length : zone);
  if (!words) return address;
  if (isIpv4Mapped(words)) return ipv4Text(words);
  if (ipv6Subnet === false || ipv6Subnet === 128) return ipv6Text(words);
  return `${ipv6Text(masked(words, ipv6Subnet))}/${ipv6Subnet}`;
}

/**
 * The length of the IPv6 network a feature in its one spelling names: 128 for one address, the
 * length of a network (`2001:db8:0:1200::/56`); undefined for anything else (an IPv4 address, a
 * name). What a rule naming it can match at /gate, which names IPv6 clients by their network.
 */
export function ipv6PrefixLength(feature: string): number | undefined {
  const slash = feature.indexOf('/');
  const words = ipv6Words(feature, slash === -1 ? feature.length : slash);
  if (!words || isIpv4Mapped(words)) return undefined;
  return slash === -1 ? 128 : prefixBits(feature, slash + 1);
}

/** Whether `value` can be an ipv6Subnet option: a whole number of bits from 1 to 128, or false. */
export function validIpv6Subnet(value: unknown): value is number | false {
  return value === false || (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 128);
}

const COLON = 0x3a;
const DOT = 0x2e;

/**
 * The eight 16-bit words of the IPv6 address `text` holds before `end`, or undefined when it
 * holds none. One pass over its characters, refusing at the first that cannot be one (`user:42`
 * at its `u`), rather than ipaddr.js, which takes ~10 µs to refuse a name and throws to do it:
 * this runs on every check of a feature with a colon.
 */
function ipv6Words(text: string, end: number): number[] | undefined {
  const words: number[] = [];
  /** Where `::` stands for zero words or more: the index of the word after it. */
  let gap = -1;
  let word = 0;
  let digits = 0;
  let i = 0;
  if (text.charCodeAt(0) === COLON) {
    if (text.charCodeAt(1) !== COLON) return undefined;
    gap = 0;
    i = 2;
  }
  for (; i < end; i++) {
    const code = text.charCodeAt(i);
    if (code === COLON) {
      if (digits > 0) {
        if (words.push(word) > 7) return undefined;
        word = 0;
        digits = 0;
      } else if (gap === -1 && text.charCodeAt(i - 1) === COLON) gap = words.length;
      else return undefined;
      // A colon ending the text is only a gap's second one.
      if (i === end - 1 && gap !== words.length) return undefined;
      continue;
    }
    if (code === DOT) {
      // An IPv4 tail (`::ffff:10.9.9.9`): the last two words, read again as dotted decimal.
      const tail = ipv4Words(text, i - digits, end);
      if (!tail || words.length > 6) return undefined;
      words.push(tail[0], tail[1]);
      digits = 0;
      break;
    }
    const value = hexDigit(code);
    if (value < 0 || digits === 4) return undefined;
    word = word * 16 + value;
    digits++;
  }
  if (digits > 0 && words.push(word) > 8) return undefined;
  // `::` stands for one zero word or more; without one, all eight are written.
  if (gap === -1) return words.length === 8 ? words : undefined;
  if (words.length > 7) return undefined;
  words.splice(gap, 0, ...ZEROS.slice(words.length));
  return words;
}

const ZEROS: readonly number[] = [0, 0, 0, 0, 0, 0, 0, 0];

/** A hex digit's value, or -1. */
function hexDigit(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  const lower = code | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

/**
 * Dotted decimal from `start` to `end` as two words: four parts of 0 to 255, no leading zeros
 * (`010` is octal to some readers and decimal to others: not an address).
 */
function ipv4Words(text: string, start: number, end: number): [number, number] | undefined {
  const bytes: number[] = [];
  let value = 0;
  let digits = 0;
  for (let i = start; i <= end; i++) {
    const code = i === end ? DOT : text.charCodeAt(i);
    if (code === DOT) {
      if (digits === 0 || value > 255 || bytes.push(value) > 4) return undefined;
      value = 0;
      digits = 0;
      continue;
    }
    if (code < 0x30 || code > 0x39 || (digits === 1 && value === 0)) return undefined;
    value = value * 10 + code - 0x30;
    digits++;
  }
  if (bytes.length !== 4) return undefined;
  const [a = 0, b = 0, c = 0, d = 0] = bytes;
  return [(a << 8) | b, (c << 8) | d];
}

/** A network's length after its slash: 0 to 128, no leading zeros; undefined for anything else. */
function prefixBits(text: string, start: number): number | undefined {
  const bits = text.slice(start);
  return /^(?:0|[1-9][0-9]{0,2})$/.test(bits) && Number(bits) <= 128 ? Number(bits) : undefined;
}

/** `::ffff:a.b.c.d`: the first 80 bits zero, the next 16 ones. */
function isIpv4Mapped(words: readonly number[]): boolean {
  return words[5] === 0xffff && words[0] === 0 && words[1] === 0 && words[2] === 0 && words[3] === 0 && words[4] === 0;
}

function ipv4Text(words: readonly number[]): string {
  const high = words[6] ?? 0;
  const low = words[7] ?? 0;
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}

/** RFC 5952: lower-case, no leading zeros, the longest run of two zero words or more (the first of equals) as `::`. */
function ipv6Text(words: readonly number[]): string {
  let runStart = -1;
  let runLength = 1;
  for (let i = 0; i < 8;) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let end = i;
    while (end < 8 && words[end] === 0) end++;
    if (end - i > runLength) {
      runStart = i;
      runLength = end - i;
    }
    i = end;
  }
  let text = '';
  for (let i = 0; i < 8; i++) {
    if (i === runStart) {
      text += '::';
      i += runLength - 1;
      continue;
    }
    if (text !== '' && !text.endsWith(':')) text += ':';
    text += (words[i] ?? 0).toString(16);
  }
  return text;
}

/** The first `bits` bits of an address: the network of that length holding it. */
function masked(words: readonly number[], bits: number): number[] {
  return words.map((word, index) => {
    const kept = Math.max(0, Math.min(16, bits - index * 16));
    return kept === 0 ? 0 : word & ((0xffff << (16 - kept)) & 0xffff);
  });
}
