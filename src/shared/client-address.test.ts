import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clientAddressFeature, validIpv6Subnet } from './client-address.js';

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
