// /gate, as nginx auth_request, Traefik ForwardAuth and Envoy ext_authz call it.
import { describe, expect, it } from 'vitest';
import { createLimiter } from '../src/counting/limiter.js';
import { buildApp } from '../src/http/app.js';
import { createEmbeddedStore } from '../src/store/embedded-store.js';

function gatewayApp(gateway: object) {
  const store = createEmbeddedStore();
  const policies = {
    events: { login: { limits: [{ limit: 2, window: '1m' }] }, api: { limits: [{ limit: 3, window: '1m' }] } },
    gateway,
  };
  return buildApp({ limiter: createLimiter({ policies, store }), store });
}

describe('/gate', () => {
  const app = gatewayApp({ trustedProxies: 1, denyStatus: 403, routes: [{ prefix: '/login', event: 'login' }, { prefix: '/api/', event: 'api' }] });
  /** A request relayed by nginx at 10.0.0.2 for a client that nginx saw as `client`. */
  const viaNginx = (uri: string, forwardedFor: string, method: 'GET' | 'POST' = 'GET') =>
    app.inject({ method, url: '/gate', remoteAddress: '10.0.0.2', headers: { 'x-original-uri': uri, 'x-forwarded-for': forwardedFor } });

  it('maps the original path to an event, counts the client behind the trusted proxy, and denies with the configured status', async () => {
    expect((await viaNginx('/login?next=/home', '203.0.113.7')).statusCode).toBe(200);
    expect((await viaNginx('/login', '203.0.113.7', 'POST')).statusCode).toBe(200);
    // A client cannot escape by writing its own X-Forwarded-For entries: only the proxy's last one counts.
    const denied = await viaNginx('/login', 'forged-1, 203.0.113.7');
    expect(denied.statusCode).toBe(403);
    expect(denied.headers['retry-after']).toMatch(/^\d+$/);
    expect(denied.headers.ratelimit).toBe(`"login-1m";r=0;t=${String(denied.headers['retry-after'])}`);
    expect(denied.headers['ratelimit-policy']).toBe('"login-1m";q=2;w=60');
    // Another client, another count.
    expect((await viaNginx('/login', '198.51.100.1')).statusCode).toBe(200);
  });

  it('takes the event from the path after /gate (Envoy prepends its prefix), from x-memgate-event, or from the first segment', async () => {
    const envoy = await app.inject({ method: 'DELETE', url: '/gate/api/v1/users/7', remoteAddress: '10.0.0.3', headers: { 'x-forwarded-for': '192.0.2.1' } });
    expect(envoy.headers['ratelimit-policy']).toBe('"api-1m";q=3;w=60');
    const named = await app.inject({ method: 'PUT', url: '/gate/anything', remoteAddress: '10.0.0.3', headers: { 'x-memgate-event': 'login', 'x-forwarded-for': '192.0.2.1' } });
    expect(named.headers['ratelimit-policy']).toBe('"login-1m";q=2;w=60');
    const segment = await app.inject({ method: 'GET', url: '/gate/api', remoteAddress: '10.0.0.3', headers: { 'x-forwarded-for': '192.0.2.1' } });
    expect(segment.headers['ratelimit-policy']).toBe('"api-1m";q=3;w=60');
  });

  it('refuses what it cannot place with a 400, counting nothing', async () => {
    const cases: [string, Record<string, string | string[]>, string][] = [
      ['/gate', {}, 'invalid_event'],
      ['/gate/nope', {}, 'unknown_event'],
      ['/gate/%E0%A4%A', {}, 'invalid_request'],
      // Node joins a repeated header with commas: no event has that name.
      ['/gate/anything', { 'x-memgate-event': ['login', 'api'] }, 'unknown_event'],
    ];
    for (const [url, headers, code] of cases) {
      const response = await app.inject({ method: 'GET', url, headers });
      expect(response.statusCode, url).toBe(400);
      expect(response.json<{ error?: { code: string } }>().error?.code, `${url}: ${response.body}`).toBe(code);
    }
  });

  it('takes the feature from a header when told to, and needs it', async () => {
    const keyed = gatewayApp({ feature: 'header:X-Api-Key' });
    const withKey = (key?: string) => keyed.inject({ method: 'GET', url: '/gate/api', headers: key === undefined ? {} : { 'x-api-key': key } });
    for (let i = 0; i < 3; i++) expect((await withKey('key-1')).statusCode).toBe(200);
    expect((await withKey('key-1')).statusCode).toBe(429);
    expect((await withKey('key-2')).statusCode).toBe(200);
    const missing = await withKey();
    expect(missing.statusCode).toBe(400);
    expect(missing.json<{ error: { code: string } }>().error.code).toBe('invalid_feature');
  });
});
