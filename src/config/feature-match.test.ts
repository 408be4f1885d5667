// The most specific rule wins: exact name, then narrowest network, then longest prefix;
// checked against a brute-force reading of the same rules on generated rules and clients.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { duplicateMatches, FeatureMatcher, parseClientMatch, type ClientMatch } from './feature-match.js';

const ADDRESSES = ['10.1.2.3', '10.1.9.9', '10.200.0.1', '192.0.2.7', '2001:db8::1', '2001:db8:0:1::5', '::ffff:10.1.2.3', 'fe80::1'];
// /gate counts an IPv6 client by its network (shared/client-address.ts): a network feature.
const NETWORK_FEATURES = ['2001:db8:0:1200::/56', '2001:db8::/32', '2001:db8::/16', 'fe80::/10'];
const NAMES = ['10', 'alice', 'alice@example.com', 'tenant-1/a', 'tenant-1/b', 'tenant-2/a', '', ...ADDRESSES, ...NETWORK_FEATURES];
const NETWORKS = ['10.0.0.0/8', '10.1.0.0/16', '10.1.2.0/24', '10.1.2.3/32', '0.0.0.0/0', '2001:db8::/32', '2001:db8::/64', '::/0', '192.0.2.0/24'];
const PREFIXES = ['t', 'tenant-', 'tenant-1/', 'tenant-1/a', 'a', 'ali', '10.', '2001:'];

const matchArbitrary: fc.Arbitrary<ClientMatch> = fc.oneof(
  fc.constantFrom(...NAMES.filter((name) => name !== '')).map((feature) => ({ feature })),
  fc.constantFrom(...PREFIXES).map((prefix) => ({ prefix })),
  fc.constantFrom(...NETWORKS).map((cidr) => ({ cidr })),
);

/** An address's bits, IPv4-mapped IPv6 read as IPv4: written apart from ipaddr.js. */
function bitsOf(text: string): { v6: boolean; bits: string } | undefined {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(text)?.[1];
  const v4 = mapped ?? (/^\d+\.\d+\.\d+\.\d+$/.test(text) ? text : undefined);
  if (v4) return { v6: false, bits: v4.split('.').map((part) => Number(part).toString(2).padStart(8, '0')).join('') };
  if (!text.includes(':')) return undefined;
  const [head = '', tail = ''] = text.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const missing = 8 - groups(head).length - groups(tail).length;
  const all = text.includes('::') ? [...groups(head), ...Array<string>(missing).fill('0'), ...groups(tail)] : groups(text);
  return { v6: true, bits: all.map((group) => parseInt(group, 16).toString(2).padStart(16, '0')).join('') };
}

function reference(rules: readonly ClientMatch[], feature: string, applies: (index: number) => boolean = () => true): number | undefined {
  const exact = rules.findIndex((rule, index) => 'feature' in rule && rule.feature === feature && applies(index));
  if (exact >= 0) return exact;
  const [featureAddress = '', featureLength] = feature.split('/');
  const address = featureLength === undefined || featureAddress.includes(':') ? bitsOf(featureAddress) : undefined;
  const addressLength = featureLength === undefined ? (address?.v6 ? 128 : 32) : Number(featureLength);
  const networks: { index: number; length: number }[] = [];
  const prefixes: { index: number; length: number }[] = [];
  rules.forEach((rule, index) => {
    if (!applies(index)) return;
    if ('cidr' in rule && address) {
      const [network = '', length = '0'] = rule.cidr.split('/');
      const net = bitsOf(network);
      const bits = Number(length);
      if (net?.v6 === address.v6 && bits <= addressLength && net.bits.slice(0, bits) === address.bits.slice(0, bits)) {
        networks.push({ index, length: bits });
      }
    }
    if ('prefix' in rule && feature.startsWith(rule.prefix)) prefixes.push({ index, length: rule.prefix.length });
  });
  const longest = (found: { index: number; length: number }[]) =>
    found.sort((a, b) => b.length - a.length)[0]?.index;
  return longest(networks) ?? longest(prefixes);
}

describe('FeatureMatcher', () => {
  it('gives the most specific rule: exact, then narrowest network, then longest prefix (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(matchArbitrary, { selector: (match) => JSON.stringify(match), maxLength: 12 }),
        fc.constantFrom(...NAMES),
        (rules, feature) => {
          const matcher = new FeatureMatcher(rules.map((match, index) => ({ match, value: index })));
          expect(matcher.match(feature)).toBe(reference(rules, feature));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('passes over rules a predicate refuses to the next most specific (an override past its until) (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(matchArbitrary, { selector: (match) => JSON.stringify(match), maxLength: 12 }),
        fc.constantFrom(...NAMES),
        fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }),
        (rules, feature, lapsed) => {
          const matcher = new FeatureMatcher(rules.map((match, index) => ({ match, value: index })));
          const applies = (index: number) => lapsed[index] !== true;
          expect(matcher.match(feature, applies)).toBe(reference(rules, feature, applies));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('holds an IPv6 client counted by its network in a rule for a wider network only', () => {
    const matcher = new FeatureMatcher([{ match: { cidr: '2001:db8::/32' }, value: 'wide' }]);
    expect(matcher.match('2001:db8:0:1200::/56')).toBe('wide');
    expect(matcher.match('2001:d00::/24')).toBeUndefined();
    expect(matcher.match('2001:db9:0:1200::/56')).toBeUndefined();
  });

  it('reads a user id such as "10" as a name, not as the address 0.0.0.10', () => {
    const matcher = new FeatureMatcher([{ match: { cidr: '0.0.0.0/8' }, value: 'network' }]);
    expect(matcher.match('10')).toBeUndefined();
    expect(matcher.match('0.0.0.10')).toBe('network');
  });

  it('is empty without rules, so a policy without them costs a check nothing', () => {
    expect(new FeatureMatcher([]).empty).toBe(true);
    expect(new FeatureMatcher([{ match: { prefix: 'a' }, value: 1 }]).empty).toBe(false);
  });
});

describe('a match as the policy file writes it', () => {
  it.each([
    [{ cidr: '10.1.2.3/8' }, { cidr: '10.0.0.0/8' }],
    [{ cidr: '::ffff:10.0.0.0/104' }, { cidr: '10.0.0.0/8' }],
    [{ cidr: '2001:db8::1/32' }, { cidr: '2001:db8::/32' }],
    [{ prefix: 'tenant-' }, { prefix: 'tenant-' }],
    [{ feature: 'alice' }, { feature: 'alice' }],
  ])('reads %j as %j', (raw, match) => {
    const problems: string[] = [];
    expect(parseClientMatch(raw, 'overrides[0].match', problems)).toEqual(match);
    expect(problems).toEqual([]);
  });

  it.each([
    [{ cidr: '10/8' }, 'overrides[0].match.cidr: must be a network such as 203.0.113.0/24 or 2001:db8::/48 (got "10/8")'],
    [{ cidr: '10.0.0.0/33' }, 'overrides[0].match.cidr: must be a network such as 203.0.113.0/24 or 2001:db8::/48 (got "10.0.0.0/33")'],
    [{ prefix: '' }, 'overrides[0].match.prefix: must be a non-empty string'],
    [{ feature: 'a', prefix: 'b' }, 'overrides[0].match: give exactly one of feature, prefix or cidr (got feature and prefix)'],
    [{}, 'overrides[0].match: give exactly one of feature, prefix or cidr (got none)'],
    ['alice', 'overrides[0].match: must be one of { feature: NAME }, { prefix: TEXT } or { cidr: NETWORK }'],
  ])('refuses %j, saying why', (raw, problem) => {
    const problems: string[] = [];
    expect(parseClientMatch(raw, 'overrides[0].match', problems)).toBeUndefined();
    expect(problems).toContain(problem);
  });

  it('names a rule given twice, whatever the spelling of its network', () => {
    const parse = (raw: unknown) => parseClientMatch(raw, 'm', []) as ClientMatch;
    expect(duplicateMatches([parse({ cidr: '10.1.2.3/8' }), parse({ cidr: '10.0.0.0/8' }), parse({ feature: 'a' })])).toEqual([
      { text: 'cidr 10.0.0.0/8', note: '' },
    ]);
  });
});
