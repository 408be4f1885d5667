import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import { canonicalFeature, clientAddressFeature, ipv6PrefixLength, validIpv6Subnet } from './client-address.js';

describe('canonicalFeature', () => {
  it.each([
    ['2001:DB8:BAD::2', '2001:db8:bad::2'],
    ['2001:db8:0:0:0:0:0:7', '2001:db8::7'],
    ['2001:0db8:0000:0000:0001:0000:0000:0001', '2001:db8::1:0:0:1'],
    ['::ffff:10.9.9.9', '10.9.9.9'],
    ['::FFFF:10.9.9.9', '10.9.9.9'],
    ['0:0:0:0:0:ffff:a09:909', '10.9.9.9'],
    ['::1', '::1'],
    ['0:0:0:0:0:0:0:0', '::'],
    ['1:0:0:2:0:0:0:3', '1:0:0:2::3'],
    ['1:0:2:3:4:5:6:7', '1:0:2:3:4:5:6:7'],
    ['1:2:3:4:5:6:7::', '1:2:3:4:5:6:7:0'],
    ['1::', '1::'],
    ['::', '::'],
    ['64:FF9B::192.0.2.1', '64:ff9b::c000:201'],
    // IPv4-compatible (RFC 4291, deprecated), not mapped: not the IPv4 address.
    ['::1.2.3.4', '::102:304'],
    ['2001:DB8:BAD:12::/56', '2001:db8:bad::/56'],
    ['2001:db8:0:12ab::1/56', '2001:db8:0:1200::/56'],
  ])('writes the address %s as %s', (written, canonical) => {
    expect(canonicalFeature(written)).toBe(canonical);
  });

  it.each([
    'alice@example.com',
    'user:42',
    'sha256:0123abcd',
    'tenant-7/api',
    '10.9.9.9',
    '010.9.9.9',
    'cafe:babe',
    '1:::2',
    ':1::2',
    '1::2::3',
    '1:2:3:4:5:6:7:8:9',
    '::ffff:10.9.9.256',
    '::ffff:010.9.9.9',
    '12345::1',
    '1:',
    '1::2:',
    '::1.2.3.4.5',
    '::ffff:a0.1.2.3',
    '1:2:3:4:5:6:7:1.2.3.4',
    'fe80::1%eth0',
    '::ffff:10.0.0.0/104',
    '2001:db8::/129',
    '2001:db8::/056',
    ':',
    '',
  ])('leaves %j as it is: not an address memgate names', (name) => {
    expect(canonicalFeature(name)).toBe(name);
  });

  it('spells every IPv6 address as ipaddr.js does (RFC 5952, IPv4-mapped as IPv4), however it is written (property)', () => {
    const words = fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 0xffff })), {
      minLength: 8,
      maxLength: 8,
    });
    const mapped = fc
      .tuple(fc.integer({ min: 0, max: 0xffff }), fc.integer({ min: 0, max: 0xffff }))
      .map(([a, b]) => [0, 0, 0, 0, 0, 0xffff, a, b]);
    const spelling = fc.record({
      upper: fc.boolean(),
      padded: fc.boolean(),
      compress: fc.boolean(),
      dotted: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.oneof(words, mapped), spelling, (address, how) => {
        let groups = address.map((word) => word.toString(16).padStart(how.padded ? 4 : 0, '0'));
        let tail = '';
        if (how.dotted) {
          const [high = 0, low = 0] = address.slice(6);
          tail = `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
          groups = groups.slice(0, 6);
        }
        let text = groups.join(':');
        // Some run of zero words (the first), written as ::
        const start = groups.findIndex((group) => /^0+$/.test(group));
        if (how.compress && start !== -1) {
          let end = start;
          while (end < groups.length && /^0+$/.test(groups[end] ?? '')) end++;
          text = `${groups.slice(0, start).join(':')}::${groups.slice(end).join(':')}`;
          if (tail && !text.endsWith(':')) text += ':';
        } else if (tail) text += ':';
        text += tail;
        if (how.upper) text = text.toUpperCase();
        // From the words, not by parsing the text: ipaddr.js reads `::1.2.3.4` as IPv4-mapped.
        const parsed = new ipaddr.IPv6(address);
        const expected = parsed.isIPv4MappedAddress() ? parsed.toIPv4Address().toString() : parsed.toRFC5952String();
        expect(canonicalFeature(text)).toBe(expected);
        // One spelling: written again, it stays.
        expect(canonicalFeature(expected)).toBe(expected);
      }),
      { numRuns: 1000 },
    );
  });

  it('tells the length of the IPv6 network a feature names; none for IPv4 or a name', () => {
    expect(ipv6PrefixLength('2001:db8:bad::2')).toBe(128);
    expect(ipv6PrefixLength('2001:db8:bad::/56')).toBe(56);
    expect(ipv6PrefixLength('10.9.9.9')).toBeUndefined();
    expect(ipv6PrefixLength('::ffff:a09:909')).toBeUndefined();
    expect(ipv6PrefixLength('user:42')).toBeUndefined();
  });
});

describe('clientAddressFeature', () => {
  it('counts an IPv6 client by its /56 by default, every address of the prefix as one', () => {
    expect(clientAddressFeature('2001:db8:0:12ab::1')).toBe('2001:db8:0:1200::/56');
    expect(clientAddressFeature('2001:db8:0:12ff:ffff:ffff:ffff:ffff')).toBe('2001:db8:0:1200::/56');
    expect(clientAddressFeature('2001:db8:0:1300::1')).toBe('2001:db8:0:1300::/56');
  });

  it('takes another prefix, or none', () => {
    expect(clientAddressFeature('2001:db8:abcd:12ab::1', 48)).toBe('2001:db8:abcd::/48');
    expect(clientAddressFeature('2001:db8:0:12ab::1', 64)).toBe('2001:db8:0:12ab::/64');
    expect(clientAddressFeature('2001:DB8:0:0:0:0:0:1', false)).toBe('2001:db8::1');
    expect(clientAddressFeature('2001:db8::1', 128)).toBe('2001:db8::1');
  });

  it('counts IPv4, and IPv4 mapped into IPv6, as the IPv4 address', () => {
    expect(clientAddressFeature('203.0.113.7')).toBe('203.0.113.7');
    expect(clientAddressFeature('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(clientAddressFeature('::FFFF:CB00:7107')).toBe('203.0.113.7');
  });

  it('drops a zone: it names this host’s interface, not the client', () => {
    expect(clientAddressFeature('fe80::1%eth0', false)).toBe('fe80::1');
    expect(clientAddressFeature('FE80::1:2%eth0')).toBe('fe80::/56');
  });

  it('leaves what is not an address alone', () => {
    expect(clientAddressFeature('alice@example.com')).toBe('alice@example.com');
    expect(clientAddressFeature('')).toBe('');
  });

  it('gives every address of one /56 one feature, and addresses of two /56s two (property)', () => {
    const group = fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 });
    fc.assert(
      fc.property(group, fc.integer({ min: 0, max: 0xffff }), fc.integer({ min: 0, max: 0xff }), (words, low, byte) => {
        const text = (w: number[]) => w.map((x) => x.toString(16)).join(':');
        const other = [...words];
        // Same first 56 bits: words 0-2 and the high byte of word 3; any low byte and any rest.
        other[3] = ((words[3] ?? 0) & 0xff00) | byte;
        other[7] = low;
        expect(clientAddressFeature(text(other))).toBe(clientAddressFeature(text(words)));
        const apart = [...words];
        apart[3] = (words[3] ?? 0) ^ 0x100;
        expect(clientAddressFeature(text(apart))).not.toBe(clientAddressFeature(text(words)));
      }),
    );
  });

  it('accepts 1 to 128 bits or false as ipv6Subnet', () => {
    expect([1, 56, 128, false].every(validIpv6Subnet)).toBe(true);
    expect([0, 129, 56.5, '56', true, null].some(validIpv6Subnet)).toBe(false);
  });
});
