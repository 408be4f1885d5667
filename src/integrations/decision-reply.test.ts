import { describe, expect, it } from 'vitest';
import { checkOf } from './decision-reply.js';

/** A request as the frameworks hand it over: only its address matters here. */
type Request = { ip: string; user?: string };
const defaults = { event: () => 'api', feature: (request: Request) => request.ip };

describe('checkOf: the feature of the express middleware and the fastify plugin', () => {
  it('counts an IPv6 client by its /56 by default, and an IPv4 one by its address', () => {
    const check = checkOf<Request>('test', {}, defaults);
    expect(check.feature({ ip: '2001:db8:0:12ab::1' })).toBe('2001:db8:0:1200::/56');
    expect(check.feature({ ip: '2001:db8:0:12cd::2' })).toBe('2001:db8:0:1200::/56');
    expect(check.feature({ ip: '::ffff:203.0.113.7' })).toBe('203.0.113.7');
  });

  it('takes ipv6Subnet, false for each address alone, and refuses what is no prefix length', () => {
    expect(checkOf<Request>('test', { ipv6Subnet: 64 }, defaults).feature({ ip: '2001:db8:0:12ab::1' })).toBe(
      '2001:db8:0:12ab::/64',
    );
    expect(checkOf<Request>('test', { ipv6Subnet: false }, defaults).feature({ ip: '2001:db8::1' })).toBe(
      '2001:db8::1',
    );
    expect(() => checkOf<Request>('memgateLimit', { ipv6Subnet: 0 }, defaults)).toThrow(
      'memgateLimit: ipv6Subnet must be a whole number of bits from 1 to 128, or false',
    );
  });

  it('leaves a feature of the caller’s own as it is', () => {
    const check = checkOf<Request>('test', { feature: (request) => request.user ?? '' }, defaults);
    expect(check.feature({ ip: '2001:db8::1', user: 'alice' })).toBe('alice');
  });
});
