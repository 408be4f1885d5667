// /gate, as nginx auth_request, Traefik ForwardAuth and Envoy ext_authz call it: only what
// the policy file's gateway section names is read, and bad input counts nothing.
import { describe, expect, it } from 'vitest';
import { createLimiter } from '../src/counting/limiter.js';
import { reloadable } from '../src/counting/reloadable-limiter.js';
import { buildApp } from '../src/http/app.js';
import { createEmbeddedStore } from '../src/store/embedded-store.js';

const events = { login: { limits: [{ limit: 2, window: '1m' }] }, api: { limits: [{ limit: 3, window: '1m' }] } };
const routes = [
  { prefix: '/login', event: 'login' },
  { prefix: '/api/', event: 'api' },
];

/** A moment in the middle of a second and a minute: the clock stands still while a test runs, so no answer depends on when a second turns. */
const NOW_MS = Date.UTC(2026, 10, 22, 12, 0, 30, 500);

function gatewayApp(gateway?: object) {
  const now = () => NOW_MS;
  const store = createEmbeddedStore({ now });
  const limiter = reloadable(createLimiter({ policies: { events, ...(gateway ? { gateway } : {}) }, store, now }));
  const app = buildApp({ validateResponses: true, limiter, store });
  /** What a client has left of an event's limit, counting nothing. */
  const remaining = async (event: string, feature: string) =>
    (await limiter.peek({ event, feature })).limits[0]?.remaining;
  return { app, limiter, store, remaining };
}

type Headers = Record<string, string | string[]>;
const errorCode = (response: { body: string }) =>
  (JSON.parse(response.body) as { error?: { code: string } }).error?.code;

describe('/gate behind nginx (uri from X-Original-URI, trusted proxies by address)', () => {
  const { app, remaining } = gatewayApp({
    uri: 'header:X-Original-URI',
    trustedProxies: ['10.0.0.0/8'],
    denyStatus: 403,
    invalidStatus: 401,
    routes,
  });
  const viaNginx = (uri: string, forwardedFor: string, headers: Headers = {}, remoteAddress = '10.0.0.2') =>
    app.inject({
      method: 'GET',
      url: '/gate',
      remoteAddress,
      headers: { 'x-original-uri': uri, 'x-forwarded-for': forwardedFor, ...headers },
    });

  it('maps the normalised original path to an event, counts the client behind the proxy, and denies with denyStatus', async () => {
    for (const uri of ['/login?next=/api/', '/x/../%6Cogin'])
      expect((await viaNginx(uri, '203.0.113.7')).statusCode).toBe(200);
    // Entries a client wrote before the proxy's own are not the client.
    const denied = await viaNginx('//LOGIN/', 'forged-1, 198.51.100.9, 203.0.113.7');
    expect(denied.statusCode).toBe(403);
    expect(denied.headers['retry-after']).toMatch(/^\d+$/);
    expect(denied.headers.ratelimit).toBe(`"login-1m";r=0;t=${String(denied.headers['retry-after'])}`);
    expect(denied.headers['ratelimit-policy']).toBe('"login-1m";q=2;w=60');
    expect(await remaining('login', '198.51.100.9')).toBe(2);
    expect(await remaining('api', '203.0.113.7')).toBe(3);
  });

  it('ignores every header it was not told to read: the event, other URI headers, the path after /gate', async () => {
    const response = await app.inject({
      method: 'GET',
      url: '/gate/api/x',
      remoteAddress: '10.0.0.2',
      headers: {
        'x-original-uri': '/login',
        'x-forwarded-for': '192.0.2.10',
        'x-memgate-event': 'api',
        'x-forwarded-uri': '/api/x',
        forwarded: 'for=192.0.2.99',
      },
    });
    expect(response.headers['ratelimit-policy']).toBe('"login-1m";q=2;w=60');
    expect(await remaining('login', '192.0.2.10')).toBe(1);
    expect(await remaining('api', '192.0.2.10')).toBe(3);
  });

  it('takes X-Forwarded-For only from a listed proxy: any other caller is counted as itself', async () => {
    await viaNginx('/login', '192.0.2.20', {}, '172.16.0.9');
    expect(await remaining('login', '172.16.0.9')).toBe(1);
    expect(await remaining('login', '192.0.2.20')).toBe(2);
  });

  it('counts an IPv6 client by its /56: another address of the prefix is the same client, another prefix is not', async () => {
    expect((await viaNginx('/login', '2001:db8:0:1201::7')).statusCode).toBe(200);
    expect((await viaNginx('/login', '2001:db8:0:12ff:ffff::9')).statusCode).toBe(200);
    expect((await viaNginx('/login', '2001:db8:0:1234::1')).statusCode).toBe(403);
    expect(await remaining('login', '2001:db8:0:1200::/56')).toBe(0);
    expect((await viaNginx('/login', '2001:db8:0:1300::1')).statusCode).toBe(200);
    // IPv4 mapped into IPv6 is the IPv4 client.
    await viaNginx('/api/x', '::ffff:192.0.2.44');
    expect(await remaining('api', '192.0.2.44')).toBe(2);
  });

  it('refuses with invalidStatus and a memgate-error header what it cannot place, counting nothing', async () => {
    const cases: [string, Headers, string][] = [
      ['no X-Original-URI', { 'x-forwarded-for': '192.0.2.30' }, 'invalid_uri'],
      ['an empty X-Original-URI', { 'x-original-uri': '', 'x-forwarded-for': '192.0.2.30' }, 'invalid_uri'],
      [
        'X-Original-URI twice',
        { 'x-original-uri': ['/api/x', '/login'], 'x-forwarded-for': '192.0.2.30' },
        'invalid_uri',
      ],
      ['invalid percent-encoding', { 'x-original-uri': '/login%zz', 'x-forwarded-for': '192.0.2.30' }, 'invalid_uri'],
      [
        'an encoded slash before ..',
        { 'x-original-uri': '/api/x%2F..%2F..%2Flogin', 'x-forwarded-for': '192.0.2.30' },
        'ambiguous_uri',
      ],
      [
        'a backslash traversal',
        { 'x-original-uri': '/api/x\\..\\..\\login', 'x-forwarded-for': '192.0.2.30' },
        'ambiguous_uri',
      ],
      [
        'a ;parameter traversal',
        { 'x-original-uri': '/api/..;/login', 'x-forwarded-for': '192.0.2.30' },
        'ambiguous_uri',
      ],
      [
        'a proxy sending a name for the client',
        { 'x-original-uri': '/login', 'x-forwarded-for': 'not-an-address' },
        'invalid_feature',
      ],
    ];
    for (const [name, headers, code] of cases) {
      const response = await app.inject({ method: 'GET', url: '/gate', remoteAddress: '10.0.0.2', headers });
      expect(response.statusCode, name).toBe(401);
      expect(response.headers['memgate-error'], name).toBe(code);
      expect(errorCode(response), name).toBe(code);
    }
    expect(await remaining('login', '192.0.2.30')).toBe(2);
    expect(await remaining('api', '192.0.2.30')).toBe(3);
  });

  it('lets an unmatched path through, counting nothing', async () => {
    const response = await viaNginx('/static/app.js', '192.0.2.40');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ allowed: true, limits: [], policyVersion: expect.any(String) as string });
    expect(response.headers.ratelimit).toBeUndefined();
  });

  it('never refuses a request for its body: a gateway may forward any', async () => {
    for (const [contentType, payload] of [
      ['text/plain', 'hello'],
      ['application/json', '{broken'],
      ['application/octet-stream', 'x'.repeat(40_000)],
    ] as const) {
      const response = await app.inject({
        method: 'POST',
        url: '/gate',
        remoteAddress: '10.0.0.2',
        headers: { 'content-type': contentType, 'x-original-uri': '/api/x', 'x-forwarded-for': '192.0.2.50' },
        payload,
      });
      expect(response.statusCode, contentType).toBe(200);
    }
    expect(await remaining('api', '192.0.2.50')).toBe(0);
  });
});

describe('/gate behind Envoy (uri from the path after /gate)', () => {
  const { app, remaining } = gatewayApp({ trustedProxies: 1, routes });
  const viaEnvoy = (method: 'GET' | 'DELETE' | 'PROPFIND', url: string, headers: Headers = {}) =>
    app.inject({ method, url, remoteAddress: '10.0.0.3', headers: { 'x-forwarded-for': '192.0.2.1', ...headers } });

  it('maps the path after /gate, whatever the method, and ignores headers naming an event or a URI', async () => {
    expect((await viaEnvoy('DELETE', '/gate/api/v1/users/7?force=1')).headers['ratelimit-policy']).toBe(
      '"api-1m";q=3;w=60',
    );
    expect(
      (await viaEnvoy('PROPFIND', '/gate/%6Cogin', { 'x-memgate-event': 'api', 'x-original-uri': '/api/' })).headers[
        'ratelimit-policy'
      ],
    ).toBe('"login-1m";q=2;w=60');
    expect(await remaining('api', '192.0.2.1')).toBe(2);
    expect(await remaining('login', '192.0.2.1')).toBe(1);
  });

  it('answers a path that is not valid percent-encoding with invalidStatus, and nothing under /gate with 5xx', async () => {
    const response = await viaEnvoy('GET', '/gate/login%E0%A4%A');
    expect(response.statusCode).toBe(400);
    expect(response.headers['memgate-error']).toBe('invalid_uri');
    expect((await viaEnvoy('GET', `/gate/${'a'.repeat(5000)}`)).statusCode).toBe(200);
  });

  it('refuses a bare /gate: a gateway that sends no path sends its URI somewhere memgate was not told to read', async () => {
    for (const url of ['/gate', '/gate?next=/login']) {
      const response = await app.inject({
        method: 'GET',
        url,
        remoteAddress: '10.0.0.3',
        headers: { 'x-original-uri': '/login', 'x-forwarded-for': '192.0.2.2' },
      });
      expect([response.statusCode, response.headers['memgate-error']], url).toEqual([400, 'invalid_uri']);
    }
    expect(await remaining('login', '192.0.2.2')).toBe(2);
  });
});

describe('/gate event and feature sources', () => {
  it('reads an event header only when the policy names it: unknown names and repeats are refused, absence falls back to routes', async () => {
    const { app, remaining } = gatewayApp({ event: 'header:X-Memgate-Event', uri: 'header:X-Original-URI', routes });
    const ask = (headers: Headers) =>
      app.inject({ method: 'GET', url: '/gate', headers: { 'x-original-uri': '/login', ...headers } });
    expect((await ask({ 'x-memgate-event': 'api' })).headers['ratelimit-policy']).toBe('"api-1m";q=3;w=60');
    expect((await ask({})).headers['ratelimit-policy']).toBe('"login-1m";q=2;w=60');
    const unknown = await ask({ 'x-memgate-event': 'nope' });
    expect([unknown.statusCode, errorCode(unknown)]).toEqual([400, 'unknown_event']);
    const twice = await ask({ 'x-memgate-event': ['api', 'api'] });
    expect([twice.statusCode, errorCode(twice)]).toEqual([400, 'invalid_event']);
    expect(await remaining('api', '127.0.0.1')).toBe(2);
    expect(await remaining('login', '127.0.0.1')).toBe(1);
  });

  it('takes the feature from a header when told to, needs it once, and not for a path it lets through', async () => {
    const { app } = gatewayApp({ feature: 'header:X-Api-Key', routes });
    const ask = (url: string, key?: string | string[]) =>
      app.inject({ method: 'GET', url, headers: key === undefined ? {} : { 'x-api-key': key } });
    for (let i = 0; i < 3; i++) expect((await ask('/gate/api/x', 'key-1')).statusCode).toBe(200);
    expect((await ask('/gate/api/x', 'key-1')).statusCode).toBe(429);
    expect((await ask('/gate/api/x', 'key-2')).statusCode).toBe(200);
    expect(errorCode(await ask('/gate/api/x'))).toBe('invalid_feature');
    expect(errorCode(await ask('/gate/api/x', ['key-3', 'key-4']))).toBe('invalid_feature');
    expect((await ask('/gate/public')).statusCode).toBe(200);
  });

  it('follows the unmatched rule: deny refuses, an event counts', async () => {
    const deny = gatewayApp({ unmatched: 'deny', routes }).app;
    const refused = await deny.inject({ method: 'GET', url: '/gate/elsewhere' });
    expect([refused.statusCode, refused.headers['memgate-error']]).toEqual([400, 'unmatched_path']);
    const counted = gatewayApp({ unmatched: 'api', routes });
    expect((await counted.app.inject({ method: 'GET', url: '/gate/elsewhere' })).headers['ratelimit-policy']).toBe(
      '"api-1m";q=3;w=60',
    );
    expect(await counted.remaining('api', '127.0.0.1')).toBe(2);
  });

  it('counts each IPv6 address alone with ipv6Subnet: false, or by the prefix it names', async () => {
    const each = gatewayApp({ trustedProxies: 1, routes, ipv6Subnet: false });
    await each.app.inject({ method: 'GET', url: '/gate/login', headers: { 'x-forwarded-for': '2001:db8::1' } });
    expect(await each.remaining('login', '2001:db8::1')).toBe(1);
    const wide = gatewayApp({ trustedProxies: 1, routes, ipv6Subnet: 48 });
    await wide.app.inject({ method: 'GET', url: '/gate/login', headers: { 'x-forwarded-for': '2001:db8:7:ff00::1' } });
    expect(await wide.remaining('login', '2001:db8:7::/48')).toBe(1);
    expect(() => gatewayApp({ routes, ipv6Subnet: 129 })).toThrow(/ipv6Subnet/);
  });

  it('is off without a gateway section', async () => {
    const response = await gatewayApp().app.inject({ method: 'GET', url: '/gate/login' });
    expect([response.statusCode, errorCode(response)]).toEqual([404, 'not_found']);
  });

  it('trusts the proxies of the policies in use, after a reload too', async () => {
    const { app, limiter, store, remaining } = gatewayApp({ trustedProxies: 0, routes });
    const ask = () =>
      app.inject({
        method: 'GET',
        url: '/gate/login',
        remoteAddress: '10.0.0.4',
        headers: { 'x-forwarded-for': '192.0.2.60' },
      });
    await ask();
    expect(await remaining('login', '10.0.0.4')).toBe(1);
    limiter.replace(createLimiter({ policies: { events, gateway: { trustedProxies: ['10.0.0.4'], routes } }, store }));
    await ask();
    expect(await remaining('login', '192.0.2.60')).toBe(1);
  });
});
