import { readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { planEvents, type WindowsPlan } from '../counting/plan.js';
import { loadPolicyFile, parsePolicies, parsePolicyText, PolicyError, type PolicySet } from './policies.js';

function problemsOf(document: unknown): readonly string[] {
  try {
    parsePolicies(document, 'test.yaml');
  } catch (error) {
    expect(error).toBeInstanceOf(PolicyError);
    return (error as PolicyError).problems;
  }
  throw new Error('expected the policies to be refused');
}

describe('parsePolicies', () => {
  it('reads the example from the issue, filling defaults and names', () => {
    const policies = parsePolicies({
      events: {
        login: { limits: [{ limit: 5, window: '1m' }, { limit: 100, window: '1d' }] },
        url_shorten: { limits: [{ limit: 100, window: '60s', granularity: '1s' }] },
        export: { algorithm: 'fixed', limits: [{ limit: 10, window: '1h' }] },
      },
    });
    expect([...policies.events.keys()]).toEqual(['login', 'url_shorten', 'export']);
    expect(policies.events.get('login')).toEqual({
      event: 'login',
      algorithm: 'sliding',
      edge: 'whole',
      onStoreError: 'allow',
      limits: [
        { name: 'login-1m', limit: 5, window: 60, granularity: 1 },
        { name: 'login-1d', limit: 100, window: 86_400, granularity: 1 },
      ],
    });
    expect(policies.events.get('export')?.limits).toEqual([{ name: 'export-1h', limit: 10, window: 3600, granularity: 3600 }]);
  });

  it('reads what an event decides when the store cannot answer, and refuses anything but allow or deny', () => {
    expect(parsePolicies({ events: { a: { onStoreError: 'deny', limits: [{ limit: 1, window: 60 }] } } }).events.get('a')?.onStoreError).toBe('deny');
    expect(() => parsePolicies({ events: { a: { onStoreError: 'error', limits: [{ limit: 1, window: 60 }] } } }, 'p.yaml')).toThrow(/event "a", field onStoreError/);
  });

  describe('gateway section', () => {
    const events = { login: { limits: [{ limit: 1, window: 60 }] }, api: { limits: [{ limit: 1, window: 60 }] } };
    const gatewayOf = (gateway: object) => parsePolicies({ events, gateway }).gateway;

    it('defaults to what a client cannot influence: its address, the path after /gate, routes, allow the unmatched, 429 and 400', () => {
      expect(gatewayOf({ routes: [{ prefix: '/a', event: 'api' }, { prefix: '/a/login', event: 'login' }] })).toMatchObject({
        feature: { from: 'client-ip' },
        trustedProxies: 0,
        uri: { from: 'path' },
        event: { from: 'routes' },
        routes: [{ prefix: '/a/login', event: 'login' }, { prefix: '/a', event: 'api' }],
        pathCase: 'insensitive',
        unmatched: 'allow',
        denyStatus: 429,
        invalidStatus: 400,
      });
      expect(parsePolicies({ events }).gateway).toBeUndefined();
    });

    it('reads headers, statuses, a path case and an unmatched rule', () => {
      const gateway = {
        feature: 'header:X-Api-Key',
        uri: 'header:X-Original-URI',
        event: 'header:X-Memgate-Event',
        pathCase: 'sensitive',
        unmatched: 'api',
        denyStatus: 403,
        invalidStatus: 401,
      };
      expect(gatewayOf(gateway)).toMatchObject({
        feature: { from: 'header', header: 'x-api-key' },
        uri: { from: 'header', header: 'x-original-uri' },
        event: { from: 'header', header: 'x-memgate-event' },
        pathCase: 'sensitive',
        unmatched: { event: 'api' },
        denyStatus: 403,
        invalidStatus: 401,
      });
      expect(gatewayOf({ unmatched: 'deny' })?.unmatched).toBe('deny');
    });

    it('trusts a hop count of proxies at any address, or a list of addresses, ranges and names', () => {
      const byCount = gatewayOf({ trustedProxies: 2, unmatched: 'api' });
      expect([0, 1, 2].map((hop) => byCount?.trusts('203.0.113.1', hop))).toEqual([true, true, false]);
      const byAddress = gatewayOf({ trustedProxies: ['10.0.0.0/8', 'loopback', '2001:db8::1'], unmatched: 'api' });
      expect(['10.1.2.3', '127.0.0.1', '::1', '2001:db8::1', '::ffff:10.0.0.1'].map((a) => byAddress?.trusts(a, 0))).toEqual([true, true, true, true, true]);
      expect(['11.0.0.1', '192.168.0.1', '2001:db8::2'].map((a) => byAddress?.trusts(a, 0))).toEqual([false, false, false]);
      expect(gatewayOf({ trustedProxies: [], unmatched: 'api' })?.trusts('127.0.0.1', 0)).toBe(false);
    });

    it('matches routes against the normalised path, refusing what it cannot place', () => {
      const resolve = gatewayOf({ routes: [{ prefix: '/login', event: 'login' }, { prefix: '/API/', event: 'api' }] })?.resolve ?? (() => undefined);
      for (const uri of ['/login', '//LOGIN', '/x/../%6cogin?next=/api/', '/login/', '/login;a=b', 'http://h/login']) expect(resolve(uri), uri).toEqual({ action: 'count', event: 'login' });
      expect(resolve('/api')).toEqual({ action: 'count', event: 'api' });
      expect(resolve('/elsewhere')).toEqual({ action: 'allow' });
      expect(resolve('/login%zz')).toMatchObject({ action: 'refuse', code: 'invalid_uri' });
      for (const uri of ['/api%2F..%2Flogin', '/api/..;/login', '/api\\..\\login', '/api//../login']) expect(resolve(uri), uri).toMatchObject({ action: 'refuse', code: 'ambiguous_uri' });
      // Readings that agree on the route are not ambiguous.
      expect(resolve('/api/users%2Fme')).toEqual({ action: 'count', event: 'api' });
      const sensitive = gatewayOf({ pathCase: 'sensitive', unmatched: 'deny', routes: [{ prefix: '/login', event: 'login' }] })?.resolve ?? (() => undefined);
      expect(sensitive('/login')).toEqual({ action: 'count', event: 'login' });
      expect(sensitive('/LOGIN')).toMatchObject({ action: 'refuse', code: 'unmatched_path' });
      expect(gatewayOf({ unmatched: 'api' })?.resolve('/anything')).toEqual({ action: 'count', event: 'api' });
    });

    it('names every fault at once, listing what is allowed', () => {
      expect(
        problemsOf({
          events,
          gateway: {
            feature: 'cookie:x',
            uri: 'query',
            event: 'header:',
            trustedProxies: ['10.0.0.0/33', 'loopback', 'proxy.local'],
            unmatched: 'nope',
            routes: [{ prefix: '/x', event: 'nope' }, { prefix: '/a%zz', event: 'api' }, { prefix: '/Login', event: 'login' }, { prefix: '/x/../LOGIN', event: 'api' }],
          },
        }),
      ).toEqual([
        'gateway, field feature: must be client-ip or header:<name> (got "cookie:x")',
        'gateway, field trustedProxies[0]: "10.0.0.0/33" is not an IP address, a CIDR range or one of loopback, linklocal, uniquelocal',
        'gateway, field trustedProxies[2]: "proxy.local" is not an IP address, a CIDR range or one of loopback, linklocal, uniquelocal',
        'gateway, field uri: must be path or header:<name> (got "query")',
        'gateway, field event: must be routes or header:<name> (got "header:")',
        'gateway, field routes[0].event: "nope" is not an event of this file',
        'gateway, field routes[1].prefix: "/a%zz" is not valid percent-encoding',
        'gateway, field routes[3].prefix: "/x/../LOGIN" names the same path as an earlier route once normalised (pathCase: insensitive)',
        'gateway, field unmatched: must be allow, deny or an event of this file (got "nope")',
      ]);
      // In the order of the file.
      expect(problemsOf({ events, gateway: { pathCase: 'upper', denyStatus: 500, invalidStatus: 422, trustedProxies: 'loopback', routes: [{ prefix: 'login', event: 'login' }] } })).toEqual([
        'field gateway.pathCase: must be one of insensitive, sensitive (got "upper")',
        'field gateway.denyStatus: must be one of 429, 403 (got 500)',
        'field gateway.invalidStatus: must be one of 400, 401 (got 422)',
        'field gateway.trustedProxies: must be a number of proxies or a list of their addresses and CIDR ranges (got "loopback")',
        'field gateway.routes[0].prefix: must be a path: a "/" then no spaces, "?" or "#" (got "login")',
      ]);
    });

    it('refuses a gateway that could never count anything', () => {
      expect(problemsOf({ events, gateway: { feature: 'client-ip' } })).toEqual([
        'gateway, field routes: none, no event header and unmatched: allow, so /gate would never count anything; add routes (prefix: / matches every path) or set unmatched',
      ]);
      expect(gatewayOf({ event: 'header:X-Memgate-Event' })?.event).toEqual({ from: 'header', header: 'x-memgate-event' });
    });
  });

  describe('client addresses in rules (issue 38: one client, one name)', () => {
    const limits = [{ limit: 1, window: 60 }];

    it('reads an address in a rule in its one spelling, so that it matches every spelling a request sends', () => {
      const policies = parsePolicies({
        events: {
          api: {
            limits,
            overrides: [{ match: { feature: '::FFFF:10.9.9.8' }, limits }],
            deny: [{ feature: '2001:DB8:BAD:0:0:0:0:2' }],
          },
        },
      });
      expect(policies.events.get('api')?.overrides?.[0]?.match).toEqual({ feature: '10.9.9.8' });
      expect(policies.events.get('api')?.deny).toEqual([{ feature: '2001:db8:bad::2' }]);
      const gateway = parsePolicies({
        events: { api: { limits } },
        gateway: { unmatched: 'api', deny: [{ feature: '2001:DB8:BAD::/56' }, { feature: '::ffff:192.0.2.1' }] },
      }).gateway;
      expect(gateway?.deny).toEqual([{ feature: '2001:db8:bad::/56' }, { feature: '192.0.2.1' }]);
      expect(gateway?.listed('2001:db8:bad::/56')).toBe('deny');
    });

    it('refuses one address written two ways: it is one client', () => {
      expect(
        problemsOf({
          events: {
            api: {
              limits,
              overrides: [
                { match: { feature: '10.9.9.8' }, limits },
                { match: { feature: '::ffff:10.9.9.8' }, limits },
              ],
              allow: [{ feature: '2001:db8::7' }],
              deny: [{ feature: '2001:DB8:0::7' }],
            },
          },
        }),
      ).toEqual([
        'event "api", field overrides[1].match: feature "10.9.9.8" is matched by an override before this one (an address is one client however it is written: IPv6 in lower case and compressed, an IPv4-mapped address as IPv4); which would apply is a guess',
        'event "api", field deny: feature "2001:db8::7" is listed more than once (in allow, deny or both) (an address is one client however it is written: IPv6 in lower case and compressed, an IPv4-mapped address as IPv4); list each client once',
      ]);
    });

    it('refuses a gateway list entry /gate never matches: an IPv6 address or a narrower network, while IPv6 clients are counted by their /56', () => {
      expect(
        problemsOf({
          events: { api: { limits } },
          gateway: {
            unmatched: 'api',
            deny: [{ feature: '2001:DB8:BAD::2' }, { cidr: '2001:db8:bad::/64' }, { cidr: '2001:db8:bad::/48' }, { feature: '203.0.113.9' }],
            allow: [{ feature: '2001:db8::/48' }],
          },
        }),
      ).toEqual([
        'gateway, field allow[0]: 2001:db8::/48 is a /48, but /gate counts IPv6 clients by their /56 (gateway.ipv6Subnet), so it never holds one; match { cidr: 2001:db8::/48 }, or set gateway.ipv6Subnet: false to count each address alone; as written it would never let through anyone',
        'gateway, field deny[0]: 2001:db8:bad::2 is one IPv6 address, but /gate counts IPv6 clients by their /56 (gateway.ipv6Subnet), so it never holds one; match { cidr: 2001:db8:bad::/56 } (every address of that /56), or set gateway.ipv6Subnet: false to count each address alone; as written it would never refuse anyone',
        'gateway, field deny[1]: 2001:db8:bad::/64 is a /64, but /gate counts IPv6 clients by their /56 (gateway.ipv6Subnet), so it never holds one; match { cidr: 2001:db8:bad::/56 } (every address of that /56), or set gateway.ipv6Subnet: false to count each address alone; as written it would never refuse anyone',
      ]);
      // Each address alone, or clients named by a header: an exact address matches.
      for (const gateway of [{ ipv6Subnet: false }, { ipv6Subnet: 128 }, { feature: 'header:x-client' }])
        expect(parsePolicies({ events: { api: { limits } }, gateway: { unmatched: 'api', deny: [{ feature: '2001:db8:bad::2' }], ...gateway } }).gateway?.deny).toHaveLength(1);
    });

    it('warns of an event’s rule /gate never matches, in the file’s order, and loads it: a /check naming the address matches it', () => {
      const policies = parsePolicies({
        events: {
          api: { limits, overrides: [{ match: { cidr: '2001:db8:bad::/120' }, limits }], deny: [{ feature: '2001:db8:bad::2' }] },
          login: { limits, deny: [{ feature: '2001:db8:bad::3' }] },
          unrouted: { limits, deny: [{ feature: '2001:db8:bad::4' }] },
        },
        gateway: { routes: [{ prefix: '/api/', event: 'api' }], unmatched: 'login' },
      });
      expect(policies.warnings).toEqual([
        'event "api", field overrides[0].match.cidr: 2001:db8:bad::/120 is a /120, but /gate counts IPv6 clients by their /56 (gateway.ipv6Subnet), so it never holds one; match { cidr: 2001:db8:bad::/56 } (every address of that /56), or set gateway.ipv6Subnet: false to count each address alone. Loaded: it matches at /check, which names the client as sent, never at /gate',
        'event "api", field deny[0].feature: 2001:db8:bad::2 is one IPv6 address, but /gate counts IPv6 clients by their /56 (gateway.ipv6Subnet), so it never holds one; match { cidr: 2001:db8:bad::/56 } (every address of that /56), or set gateway.ipv6Subnet: false to count each address alone. Loaded: it matches at /check, which names the client as sent, never at /gate',
        'event "login", field deny[0].feature: 2001:db8:bad::3 is one IPv6 address, but /gate counts IPv6 clients by their /56 (gateway.ipv6Subnet), so it never holds one; match { cidr: 2001:db8:bad::/56 } (every address of that /56), or set gateway.ipv6Subnet: false to count each address alone. Loaded: it matches at /check, which names the client as sent, never at /gate',
      ]);
      expect(parsePolicies({ events: { api: { limits, deny: [{ feature: '2001:db8:bad::2' }] } } }).warnings).toEqual([]);
    });
  });

  it('reads an event’s lease section, with defaults from the tightest limit', () => {
    const set = parsePolicies({
      events: {
        given: { limits: [{ limit: 100, window: '1m' }], lease: { maxUnits: 25, life: '10s' } },
        defaults: { limits: [{ limit: 100, window: '1m' }, { limit: 50, window: '1h' }], lease: {} },
        capped: { limits: [{ limit: 4, window: '1m' }], lease: { maxUnits: 10 } },
        none: { limits: [{ limit: 4, window: '1m' }] },
      },
    });
    expect(set.events.get('given')?.lease).toEqual({ maxUnits: 25, life: 10 });
    expect(set.events.get('defaults')?.lease).toEqual({ maxUnits: 5, life: 5 });
    // No lease may hold more than the tightest limit admits.
    expect(set.events.get('capped')?.lease).toEqual({ maxUnits: 4, life: 5 });
    expect(set.events.get('none')?.lease).toBeUndefined();
  });

  it('reads an edge rule for a sliding event', () => {
    expect(parsePolicies({ events: { a: { edge: 'weighted', limits: [{ limit: 1, window: 60, granularity: 60 }] } } }).events.get('a')?.edge).toBe('weighted');
  });

  it('keeps an explicit limit name', () => {
    const policies = parsePolicies({ events: { a: { limits: [{ name: 'burst', limit: 1, window: 10 }] } } });
    expect(policies.events.get('a')?.limits[0]?.name).toBe('burst');
  });

  it.each([
    ['an unknown top-level key', { events: { a: { limits: [{ limit: 1, window: 1 }] } }, extra: 1 }, 'top level: unknown key "extra"'],
    ['an unknown event key', { events: { a: { limitz: 1, limits: [{ limit: 1, window: 1 }] } } }, 'event "a": unknown key "limitz"; the event takes algorithm, edge, onStoreError, mode, lease, reservations, limits, tiers, overrides, allow, deny'],
    ['a lease that outlives the shortest window', { events: { a: { limits: [{ limit: 9, window: '10s' }], lease: { life: '9s' } } } }, 'event "a", field lease.life: a lease of 9s (plus 2 s for its return) must end within the shortest window, 10s'],
    ['a lease life over a minute', { events: { a: { limits: [{ limit: 9, window: '1h' }], lease: { life: '2m' } } } }, 'event "a", field lease.life: 2m is longer than the 60 s a lease may live'],
    ['a lease life that is no duration', { events: { a: { limits: [{ limit: 9, window: '1h' }], lease: { life: 'soon' } } } }, 'event "a", field lease.life: must be a positive whole duration'],
    ['a lease of no units', { events: { a: { limits: [{ limit: 9, window: '1h' }], lease: { maxUnits: 0 } } } }, 'event "a", field lease.maxUnits: must be >= 1 (got 0)'],
    ['an unknown lease key', { events: { a: { limits: [{ limit: 9, window: '1h' }], lease: { units: 3 } } } }, 'event "a", field lease: unknown key "units"'],
    ['an unknown limit key', { events: { a: { limits: [{ limit: 1, window: 1, windw: 2 }] } } }, 'event "a", field limits[0]: unknown key "windw"; a limit takes name, limit, window, granularity, anchor, timezone, rate, burst'],
    ['a missing window', { events: { a: { limits: [{ limit: 1 }] } } }, 'event "a", field limits[0]: missing required key "window"'],
    ['a missing limits list', { events: { a: {} } }, 'event "a": missing required key "limits"'],
    ['a zero limit', { events: { a: { limits: [{ limit: 0, window: 1 }] } } }, 'event "a", field limits[0].limit: must be >= 1 (got 0)'],
    ['a fractional limit', { events: { a: { limits: [{ limit: 2.5, window: 1 }] } } }, 'event "a", field limits[0].limit: must be integer (got 2.5)'],
    ['a negative window', { events: { a: { limits: [{ limit: 1, window: -60 }] } } }, 'event "a", field limits[0].window: must be a positive whole duration'],
    ['a zero window', { events: { a: { limits: [{ limit: 1, window: '0s' }] } } }, 'event "a", field limits[0].window: must be a positive whole duration'],
    ['a fractional window', { events: { a: { limits: [{ limit: 1, window: 1.5 }] } } }, 'event "a", field limits[0].window: must be a positive whole duration like 30s, 5m, 1h, 1d or a number of seconds (got 1.5)'],
    ['an unknown unit', { events: { a: { limits: [{ limit: 1, window: '1y' }] } } }, 'event "a", field limits[0].window: must be a positive whole duration'],
    ['a window that granularity does not divide', { events: { a: { limits: [{ limit: 1, window: '1m', granularity: '7s' }] } } }, 'event "a", field limits[0].window: 1m is not a multiple of the granularity 7s'],
    ['a granularity on a fixed window', { events: { a: { algorithm: 'fixed', limits: [{ limit: 1, window: '1m', granularity: '1s' }] } } }, 'event "a", field limits[0].granularity: applies to sliding windows only'],
    ['an unknown edge rule', { events: { a: { edge: 'half', limits: [{ limit: 1, window: 1 }] } } }, 'event "a", field edge: must be one of whole, drop, weighted (got "half")'],
    ['an edge rule on a fixed window', { events: { a: { algorithm: 'fixed', edge: 'drop', limits: [{ limit: 1, window: 60 }] } } }, 'event "a", field edge: applies to sliding windows only'],
    ['an unknown algorithm', { events: { a: { algorithm: 'leaky', limits: [{ limit: 1, window: 1 }] } } }, 'event "a", field algorithm: must be one of sliding, fixed, token-bucket, concurrency (got "leaky")'],
    ['empty events', { events: {} }, 'field events: defines no events'],
    ['no events key', {}, 'top level: missing required key "events"'],
    ['an empty limits list', { events: { a: { limits: [] } } }, 'event "a", field limits: must NOT have fewer than 1 items'],
    ['a bad event name', { events: { 'log in': { limits: [{ limit: 1, window: 1 }] } } }, 'event "log in": event names are'],
    ['two limits with one name', { events: { a: { limits: [{ limit: 1, window: 60 }, { limit: 2, window: '1m', granularity: 10 }] } } }, 'event "a", field limits[1].name: "a-1m" is used by another limit'],
    ['a document that is not an object', 'events: yes', 'top level: must be object'],
  ])('refuses %s, naming the event and field', (_case, document, expected) => {
    const problems = problemsOf(document);
    expect(problems.some((p) => p.startsWith(expected)), `${problems.join('\n')}\nshould contain ${expected}`).toBe(true);
  });

  it('reports every problem in one pass, shapes and value formats together, in the order of the file', () => {
    expect(
      problemsOf({
        events: {
          a: { limits: [{ limit: 0, window: '1y', onStoreError: 'deny' }] },
          b: { algorithm: 'leaky', limits: [{ limit: 1, window: '1m', granularity: '7s' }] },
          c: { limits: [{ limit: 1, window: '1m', granularity: '7s' }] },
          d: { algorithm: 'fixed', edge: 'drop', limits: [{ limit: 1, window: '1h', granularity: '1m' }] },
        },
        gateway: { pathCase: 'upper', routes: [{ prefix: '/x', event: 'nope' }] },
      }),
    ).toEqual([
      'event "a", field limits[0].limit: must be >= 1 (got 0)',
      'event "a", field limits[0].window: must be a positive whole duration like 30s, 5m, 1h, 1d or a number of seconds (got "1y")',
      'event "a", field limits[0]: "onStoreError" belongs to the event, not to a limit',
      'event "b", field algorithm: must be one of sliding, fixed, token-bucket, concurrency (got "leaky")',
      'event "c", field limits[0].window: 1m is not a multiple of the granularity 7s',
      'event "d", field edge: applies to sliding windows only; a fixed window has no partial bucket',
      'event "d", field limits[0].granularity: applies to sliding windows only; a fixed window is one counter per window',
      'field gateway.pathCase: must be one of insensitive, sensitive (got "upper")',
      'gateway, field routes[0].event: "nope" is not an event of this file',
    ]);
  });

  it.each([
    ['a fractional window', { limit: 1, window: 1.5 }],
    ['a missing window', { limit: 1 }],
    ['a window of the wrong type', { limit: 1, window: true }],
    ['a granularity of the wrong type', { limit: 1, window: 60, granularity: [1] }],
  ])('reports %s once, not once per check', (_case, limit) => {
    expect(problemsOf({ events: { a: { limits: [limit] } } })).toHaveLength(1);
  });

  it.each([
    ['onStoreError under a limit', { events: { a: { limits: [{ limit: 1, window: 60, onStoreError: 'deny' }] } } }, 'event "a", field limits[0]: "onStoreError" belongs to the event, not to a limit'],
    ['algorithm under a limit', { events: { a: { limits: [{ limit: 1, window: 60, algorithm: 'fixed' }] } } }, 'event "a", field limits[0]: "algorithm" belongs to the event, not to a limit'],
    ['limit on the event', { events: { a: { limit: 5, limits: [{ limit: 1, window: 60 }] } } }, 'event "a": "limit" belongs to a limit (an item of limits), not to the event'],
    ['granularity on the event', { events: { a: { granularity: '1s', limits: [{ limit: 1, window: 60 }] } } }, 'event "a": "granularity" belongs to a limit (an item of limits), not to the event'],
    ['routes under an event', { events: { a: { routes: [], limits: [{ limit: 1, window: 60 }] } } }, 'event "a": "routes" belongs to the gateway section, at the top level, not to the event'],
    ['trustedProxies under an event', { events: { a: { trustedProxies: 1, limits: [{ limit: 1, window: 60 }] } } }, 'event "a": "trustedProxies" belongs to the gateway section, at the top level, not to the event'],
    ['limits under the gateway', { events: { a: { limits: [{ limit: 1, window: 60 }] } }, gateway: { unmatched: 'a', limits: [] } }, 'field gateway: "limits" belongs to the event, not to the gateway section'],
    ['a route key on the gateway', { events: { a: { limits: [{ limit: 1, window: 60 }] } }, gateway: { unmatched: 'a', prefix: '/' } }, 'field gateway: "prefix" belongs to a route (an item of gateway.routes), not to the gateway section'],
    ['an event at the top level', { events: { a: { limits: [{ limit: 1, window: 60 }] } }, login: { limits: [] } }, 'top level: unknown key "login": it looks like an event; events go under events:'],
    ['onStoreError at the top level', { events: { a: { limits: [{ limit: 1, window: 60 }] } }, onStoreError: 'deny' }, 'top level: "onStoreError" belongs to the event, not to the top level'],
  ])('says where a known key in the wrong place belongs: %s', (_case, document, expected) => {
    expect(problemsOf(document)).toEqual([expected]);
  });

  it('lists the allowed values of every field that has a few', () => {
    expect(problemsOf({ events: { a: { onStoreError: 'error', edge: 'half', limits: [{ limit: 1, window: 60 }] } } })).toEqual([
      'event "a", field onStoreError: must be one of allow, deny (got "error")',
      'event "a", field edge: must be one of whole, drop, weighted (got "half")',
    ]);
  });
});

describe('loadPolicyFile', () => {
  async function fileWith(name: string, text: string): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'memgate-policies-'));
    const path = join(dir, name);
    await writeFile(path, text);
    return path;
  }

  it('reads YAML', async () => {
    const path = await fileWith('p.yaml', 'events:\n  login:\n    limits:\n      - { limit: 5, window: 1m }\n');
    const policies = await loadPolicyFile(path);
    expect(policies.source).toBe(path);
    expect(policies.events.get('login')?.limits[0]?.window).toBe(60);
  });

  it('reads JSON', async () => {
    const path = await fileWith('p.json', JSON.stringify({ events: { login: { limits: [{ limit: 5, window: 60 }] } } }));
    expect((await loadPolicyFile(path)).events.get('login')?.limits[0]?.limit).toBe(5);
  });

  it('names the file in every error', async () => {
    const path = await fileWith('bad.yaml', 'events:\n  login:\n    limits:\n      - { limit: 5, window: 1y }\n');
    await expect(loadPolicyFile(path)).rejects.toThrow(`invalid policies in ${path}:\n  - event "login", field limits[0].window`);
  });

  it('reports YAML syntax errors with their position', async () => {
    const path = await fileWith('broken.yaml', 'events:\n  login: [\n');
    await expect(loadPolicyFile(path)).rejects.toThrow(/not valid YAML: .*line/s);
  });

  it('reports JSON syntax errors at a line and column, as an editor shows them', async () => {
    const path = await fileWith('broken.json', '{\n  "events": {\n    "login": { "limits": [], }\n  }\n}\n');
    await expect(loadPolicyFile(path)).rejects.toThrow(
      `invalid policies in ${path}:\n  - not valid JSON: Expected double-quoted property name at line 3, column 30`,
    );
  });

  it('refuses duplicate keys in YAML instead of keeping the last one', async () => {
    const path = await fileWith('dup.yaml', 'events:\n  a:\n    limits: [{ limit: 1, window: 1 }]\n  a:\n    limits: [{ limit: 2, window: 1 }]\n');
    await expect(loadPolicyFile(path)).rejects.toThrow(/not valid YAML/);
  });

  it('reports a missing file', async () => {
    await expect(loadPolicyFile('/nonexistent/policies.yaml')).rejects.toThrow(/cannot read the file/);
  });
});

describe('any file at all', () => {
  const example = readFileSync(fileURLToPath(new URL('../../config/policies.yaml', import.meta.url)), 'utf8');

  /** Parses and plans, as the service does at start; anything but a PolicyError is a bug. */
  function load(run: () => PolicySet): void {
    try {
      planEvents(run());
    } catch (error) {
      expect(error).toBeInstanceOf(PolicyError);
      expect((error as PolicyError).message.length).toBeGreaterThan(0);
    }
  }

  it('is planned or refused with a PolicyError, never anything else: any JSON value', () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.record({ events: fc.dictionary(fc.string(), fc.jsonValue()) })), (document) => {
        load(() => parsePolicies(document, 'fuzz.json'));
      }),
      { numRuns: 2000 },
    );
  });

  it('is planned or refused with a PolicyError, never anything else: the example file with random edits', () => {
    const edit = fc.record({ at: fc.nat(example.length), cut: fc.nat(8), insert: fc.string({ unit: 'binary', maxLength: 8 }) });
    const exampleJson = JSON.stringify(parseYaml(example));
    fc.assert(
      fc.property(fc.array(edit, { minLength: 1, maxLength: 4 }), fc.boolean(), (edits, asJson) => {
        let text = asJson ? exampleJson : example;
        for (const { at, cut, insert } of edits) text = text.slice(0, at) + insert + text.slice(at + cut);
        load(() => parsePolicyText(text, asJson ? 'fuzz.json' : 'fuzz.yaml'));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('per-client rules in a policy file', () => {
  const problems = (text: string) => {
    try {
      parsePolicyText(text, 'p.yaml');
      return [];
    } catch (error) {
      return (error as PolicyError).problems;
    }
  };

  it('reads overrides, tiers and lists', () => {
    const policies = parsePolicyText(
      `events:
  api:
    limits: [{ limit: 5, window: 1m }]
    tiers:
      pro: { limits: [{ limit: 50, window: 1m }, { name: pro-day, limit: 1000, window: 1d }] }
    overrides:
      - { match: { feature: acme }, limits: [{ limit: 10, window: 1m }], until: 2026-12-31T18:00:00-05:00 }
      - { match: { cidr: "10.1.2.3/8" }, tier: pro }
    allow: [{ feature: monitor }]
    deny: [{ prefix: bot- }, { cidr: "2001:db8::/32" }]
`,
      'p.yaml',
    );
    const api = policies.events.get('api');
    expect([...(api?.tiers?.get('pro') ?? [])].map((limit) => limit.name)).toEqual(['api-1m', 'pro-day']);
    expect(api?.overrides).toEqual([
      { match: { feature: 'acme' }, limits: [{ name: 'api-1m', limit: 10, window: 60, granularity: 1 }], until: Date.UTC(2026, 11, 31, 23, 0, 0) },
      { match: { cidr: '10.0.0.0/8' }, tier: 'pro' },
    ]);
    expect(api?.allow).toEqual([{ feature: 'monitor' }]);
    expect(api?.deny).toEqual([{ prefix: 'bot-' }, { cidr: '2001:db8::/32' }]);
  });

  it('reports every faulty rule at once, in the order of the file', () => {
    expect(
      problems(`events:
  api:
    limits: [{ limit: 5, window: 1m }]
    tiers:
      pro: { limits: [{ limit: 50, window: 1x }] }
    overrides:
      - { match: { feature: acme }, limits: [{ limit: 10, window: 1m }], tier: pro }
      - { match: { feature: b } }
      - { match: { cidr: 10.0.0.300/8 }, tier: gold }
      - { match: { prefix: a, feature: b }, limits: [{ limit: 1, window: 1m }] }
      - { match: { feature: c }, limits: [{ limit: 1, window: 1m }], until: "2026-12-31 00:00" }
      - { match: { feature: c }, limits: [{ limit: 2, window: 1m }] }
      - { match: { feature: d }, limits: [{ limit: 1, window: 1m }], until: "2026-02-31T23:59:59Z" }
    allow: [{ feature: x }, { cidr: nope }]
    deny: [{ feature: x }]
`),
    ).toEqual([
      'event "api", field tiers.pro.limits[0].window: must be a positive whole duration like 30s, 5m, 1h, 1d or a number of seconds (got "1x")',
      'event "api", field overrides[0]: give an override either limits of its own or a tier, not both or neither',
      'event "api", field overrides[1]: give an override either limits of its own or a tier, not both or neither',
      'event "api", field overrides[2].match.cidr: must be a network such as 203.0.113.0/24 or 2001:db8::/48 (got "10.0.0.300/8")',
      'event "api", field overrides[2].tier: "gold" is not a tier of this event; its tiers are pro',
      'event "api", field overrides[3].match: give exactly one of feature, prefix or cidr (got feature and prefix)',
      'event "api", field overrides[4].until: must be an ISO 8601 time with its zone, on a day and at an hour that exist, such as 2026-12-31T23:59:59Z or 2026-12-31T18:00:00-05:00 (got "2026-12-31 00:00")',
      'event "api", field overrides[5].match: feature "c" is matched by an override before this one; which would apply is a guess',
      'event "api", field overrides[6].until: must be an ISO 8601 time with its zone, on a day and at an hour that exist, such as 2026-12-31T23:59:59Z or 2026-12-31T18:00:00-05:00 (got "2026-02-31T23:59:59Z")',
      'event "api", field allow[1].cidr: must be a network such as 203.0.113.0/24 or 2001:db8::/48 (got "nope")',
      'event "api", field deny: feature "x" is listed more than once (in allow, deny or both); list each client once',
    ]);
  });

  it('keeps a lease within the shortest window of every limit set', () => {
    expect(
      problems(`events:
  api:
    limits: [{ limit: 5, window: 1m }]
    lease: { life: 20s }
    overrides:
      - { match: { feature: acme }, limits: [{ limit: 10, window: 10s }] }
`),
    ).toEqual([
      'event "api", field lease.life: a lease of 20s (plus 2 s for its return) must end within the shortest window of the event, its tiers and overrides, 10s',
    ]);
  });

  it('takes a gateway tier header and gateway lists, refusing a tier read from anywhere else', () => {
    expect(
      problems(`gateway:
  tier: query:plan
  routes: [{ prefix: /, event: api }]
  deny: [{ cidr: 10.0.0.0/99 }]
events:
  api:
    limits: [{ limit: 5, window: 1m }]
`),
    ).toEqual([
      'gateway, field tier: must be header:<name>, a header your gateway sets from an authenticated identity (got "query:plan")',
      'gateway, field deny[0].cidr: must be a network such as 203.0.113.0/24 or 2001:db8::/48 (got "10.0.0.0/99")',
    ]);
  });
});

describe('limits in shadow', () => {
  it('reads mode on an event (every limit) and on a limit (its own), and refuses a lease beside shadow limits', () => {
    const policies = parsePolicyText(
      `events:
  tryout:
    mode: shadow
    limits: [{ limit: 5, window: 1m }, { limit: 50, window: 1h, mode: enforce }]
  api:
    limits: [{ limit: 5, window: 1m }, { name: tight, limit: 2, window: 10s, mode: shadow }]
`,
      'p.yaml',
    );
    expect(policies.events.get('tryout')?.limits.map((limit) => limit.shadow ?? false)).toEqual([true, false]);
    expect(policies.events.get('api')?.limits.map((limit) => limit.shadow ?? false)).toEqual([false, true]);
    expect(() =>
      parsePolicyText(
        `events:
  api:
    limits: [{ limit: 5, window: 1m, mode: shadow }]
    lease: { maxUnits: 2 }
`,
        'p.yaml',
      ),
    ).toThrow('event "api", field lease: cannot be combined with shadow limits');
  });
});

describe('calendar windows', () => {
  const fixed = (limit: object) => ({ events: { quota: { algorithm: 'fixed', limits: [{ limit: 10, ...limit }] } } });
  const limitOf = (document: object) => parsePolicies(document).events.get('quota')?.limits[0];

  it('reads a month, a week and a day of a time zone, with their anchors and names', () => {
    expect(limitOf(fixed({ window: '1mo', anchor: 15, timezone: 'Europe/Berlin' }))).toMatchObject({
      name: 'quota-1mo',
      window: 31 * 86_400,
      calendar: { unit: 'month', anchor: 15, timeZone: 'Europe/Berlin' },
    });
    expect(limitOf(fixed({ window: '1w', anchor: 'sunday' }))?.calendar).toEqual({ unit: 'week', anchor: 7, timeZone: 'UTC' });
    expect(limitOf(fixed({ window: '1w' }))?.calendar).toEqual({ unit: 'week', anchor: 1, timeZone: 'UTC' });
    expect(limitOf(fixed({ window: '1mo' }))?.calendar).toEqual({ unit: 'month', anchor: 1, timeZone: 'UTC' });
    // A zone is kept as written (Intl's own spelling of it varies between ICU versions), UTC as UTC.
    expect(limitOf(fixed({ window: '1d', timezone: 'Asia/Kolkata' }))?.calendar).toEqual({
      unit: 'day',
      anchor: 1,
      timeZone: 'Asia/Kolkata',
    });
    expect(limitOf(fixed({ window: '1w', timezone: 'Etc/UTC' }))?.calendar?.timeZone).toBe('UTC');
  });

  it('keeps a UTC day the epoch-aligned day it always was', () => {
    expect(limitOf(fixed({ window: '1d' }))).toEqual({ name: 'quota-1d', limit: 10, window: 86_400, granularity: 86_400 });
    expect(limitOf(fixed({ window: '1d', timezone: 'Etc/UTC' }))?.calendar).toBeUndefined();
  });

  it.each([
    ['a calendar window on a sliding event', { events: { q: { limits: [{ limit: 1, window: '1mo' }] } } }, 'event "q", field limits[0].window: "1mo" is a calendar window: calendar windows are 1d, 1w or 1mo with algorithm: fixed'],
    ['an unknown zone', fixed({ window: '1mo', timezone: 'Mars/Olympus' }), 'event "quota", field limits[0].timezone: must be an IANA time zone such as Europe/Berlin'],
    ['a month anchored on the 31st', fixed({ window: '1mo', anchor: 31 }), 'event "quota", field limits[0].anchor: a month\'s anchor is the day of the month it starts on, 1 to 28'],
    ['a week anchored on a made-up day', fixed({ window: '1w', anchor: 'funday' }), 'event "quota", field limits[0].anchor: a week\'s anchor is its first weekday'],
    ['an anchor on a day', fixed({ window: '1d', anchor: 2, timezone: 'Europe/Berlin' }), 'event "quota", field limits[0].anchor: a day has no anchor'],
    ['a time zone on a duration', fixed({ window: '5m', timezone: 'Europe/Berlin' }), 'event "quota", field limits[0].timezone: applies to calendar windows only (got window "5m")'],
  ])('refuses %s, saying why', (_case, document, expected) => {
    let problems: readonly string[] = [];
    try {
      parsePolicies(document);
    } catch (error) {
      problems = (error as PolicyError).problems;
    }
    expect(problems.some((problem) => problem.startsWith(expected)), problems.join('\n')).toBe(true);
  });

  it('plans one bucket a period, named by its window in keys', () => {
    const plan = planEvents(parsePolicies(fixed({ window: '1mo', anchor: 15, timezone: 'Europe/Berlin' }))).get(
      'quota',
    ) as WindowsPlan | undefined;
    const second = Date.parse('2026-03-29T12:00:00Z') / 1000;
    const [run] = plan?.limits[0]?.cover(second) ?? [];
    expect(run).toMatchObject({ start: Date.parse('2026-03-14T23:00:00Z') / 1000, count: 1 });
    expect(run?.size).toBe((Date.parse('2026-04-14T22:00:00Z') - Date.parse('2026-03-14T23:00:00Z')) / 1000);
    expect(run?.calendar?.tag).toBe('mo15@Europe/Berlin');
    // Its counters outlive the longest month, written as an absolute expiration past 30 days.
    expect(plan?.levels[0]?.ttlSeconds).toBeGreaterThan(31 * 86_400);
  });
});

describe('token buckets', () => {
  const bucket = (limit: object, extra: object = {}) => ({
    events: { api: { algorithm: 'token-bucket', limits: [limit], ...extra } },
  });
  const problems = (document: object): readonly string[] => {
    try {
      parsePolicies(document);
      return [];
    } catch (error) {
      return (error as PolicyError).problems;
    }
  };

  it('reads a rate and a burst; the burst defaults to one period of the rate', () => {
    expect(parsePolicies(bucket({ rate: '10/s', burst: 50 })).events.get('api')?.limits[0]).toEqual({
      name: 'api-10per1s',
      limit: 50,
      window: 5,
      granularity: 5,
      rate: { count: 10, periodSeconds: 1 },
    });
    expect(parsePolicies(bucket({ rate: '600/1m' })).events.get('api')?.limits[0]).toMatchObject({ limit: 600, window: 60 });
    expect(parsePolicies(bucket({ rate: '5 / 10s', burst: 1 })).events.get('api')?.limits[0]).toMatchObject({ limit: 1, window: 2 });
  });

  it.each([
    ['a missing rate', bucket({ burst: 5 }), 'event "api", field limits[0]: missing required key "rate"'],
    ['a window', bucket({ rate: '10/s', window: '1m' }), 'event "api", field limits[0].window: a token bucket takes rate and burst'],
    ['a rate that is not one', bucket({ rate: '10 per second' }), 'event "api", field limits[0].rate: must be tokens per period, such as 10/s'],
    ['a zero rate', bucket({ rate: '0/s' }), 'event "api", field limits[0].rate: must be tokens per period'],
    ['two buckets', { events: { api: { algorithm: 'token-bucket', limits: [{ rate: '1/s' }, { rate: '50/1m' }] } } }, 'event "api", field limits: a token-bucket event has one limit per set'],
    ['a lease', bucket({ rate: '1/s' }, { lease: {} }), 'event "api", field lease: applies to sliding and fixed windows'],
    ['an edge', bucket({ rate: '1/s' }, { edge: 'drop' }), 'event "api", field edge: applies to sliding windows only; a token bucket'],
    ['a rate on a window', { events: { api: { limits: [{ limit: 5, window: '1m', rate: '1/s' }] } } }, 'event "api", field limits[0].rate: applies to algorithm: token-bucket'],
    ['a bucket that takes decades to fill', bucket({ rate: '1/d', burst: 30_000 }), 'event "api", field limits[0].burst: a bucket of 30000 at 1/1d takes 82 years to fill; at most 10'],
  ])('refuses %s, saying why', (_case, document, expected) => {
    const found = problems(document);
    expect(found.some((problem) => problem.startsWith(expected)), found.join('\n')).toBe(true);
  });
});

describe('the most a file may hold', () => {
  const event = (overrides: number, lists: number) => ({
    limits: [{ limit: 10, window: '1m' }],
    overrides: Array.from({ length: overrides }, (_, i) => ({ match: { feature: `u${i}` }, limits: [{ limit: 5, window: '1m' }] })),
    deny: Array.from({ length: lists }, (_, i) => ({ feature: `d${i}` })),
  });

  it('takes 20,000 client rules in a file, 10,000 of them in one event', () => {
    const policies = parsePolicies({ events: { a: event(10_000, 0), b: event(5_000, 5_000) } });
    expect(policies.events.get('a')?.overrides).toHaveLength(10_000);
  });

  it('refuses more, counting every event’s overrides and lists and the gateway’s lists', () => {
    const refused = () =>
      parsePolicies({
        events: { a: event(8_000, 0), b: event(8_000, 0), c: event(0, 4_000) },
        gateway: { event: 'a', deny: [{ feature: 'x' }] },
      });
    expect(refused).toThrow(
      'the file holds 20001 client rules (overrides, allow and deny entries), more than the 20000 a file may hold',
    );
  });
});
