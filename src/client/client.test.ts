// The client's side of POST /check/batch and /check, against a fetch that answers as the
// contract says (the tests against a real memgate are in test/client.test.ts).
import { describe, expect, it } from 'vitest';
import { createClient } from './client.js';

interface Sent {
  readonly url: string;
  readonly body: unknown;
}

/** A fetch answering each request with `answer(path, body)`: [status, body]. */
function scriptedFetch(answer: (path: string, body: unknown) => [number, unknown]) {
  const sent: Sent[] = [];
  const fetch = (input: string, init: RequestInit) => {
    const body = JSON.parse(init.body as string) as unknown;
    sent.push({ url: input, body });
    const [status, reply] = answer(new URL(input).pathname, body);
    return Promise.resolve(new Response(JSON.stringify(reply), { status }));
  };
  return { fetch, sent };
}

const allowed = { allowed: true, limits: [{ name: 'e-1m', limit: 5, window: 60, remaining: 4, resetSeconds: 60 }] };
const denied = {
  allowed: false,
  limits: [{ name: 'e-1m', limit: 5, window: 60, remaining: 0, resetSeconds: 7 }],
  retryAfter: 7,
};

describe('createClient over the /check/batch contract', () => {
  it('sends concurrent checks as one array and gives each its element: decision, 4xx error or shed', async () => {
    const { fetch, sent } = scriptedFetch((path, body) => {
      expect(path).toBe('/base/check/batch');
      const checks = body as { feature: string }[];
      return [
        200,
        checks.map(({ feature }) => {
          if (feature === 'bad') return { error: { code: 'feature_too_long', message: 'too long' }, status: 400 };
          if (feature === 'shed') return { error: { code: 'overloaded', message: 'shed' }, status: 503 };
          return feature === 'over' ? denied : allowed;
        }),
      ];
    });
    const client = createClient({ url: 'http://memgate/base/', fetch, onError: 'deny', errorBackoffMs: 0 });
    const results = await Promise.allSettled(
      ['ok', 'over', 'bad', 'shed'].map((feature) =>
        client.check('e', feature, feature === 'ok' ? { cost: 2 } : undefined),
      ),
    );
    expect(sent).toEqual([
      {
        url: 'http://memgate/base/check/batch',
        body: [
          { event: 'e', feature: 'ok', cost: 2 },
          { event: 'e', feature: 'over' },
          { event: 'e', feature: 'bad' },
          { event: 'e', feature: 'shed' },
        ],
      },
    ]);
    expect(results).toMatchObject([
      { status: 'fulfilled', value: { ...allowed, source: 'server' } },
      { status: 'fulfilled', value: { ...denied, source: 'server' } },
      { status: 'rejected', reason: { code: 'feature_too_long', status: 400 } },
      { status: 'fulfilled', value: { allowed: false, degraded: true, retryAfter: 1, source: 'local' } },
    ]);
    expect(client.stats).toEqual({ requests: 1, checksSent: 4, answeredLocally: 1, degraded: 1 });
  });

  it('rejects every check of a batch memgate refused as a whole, with its code', async () => {
    const { fetch } = scriptedFetch(() => [400, { error: { code: 'invalid_request', message: 'not an array' } }]);
    const client = createClient({ url: 'http://memgate', fetch });
    const results = await Promise.allSettled([client.check('e', 'a'), client.check('e', 'b')]);
    expect(results).toMatchObject([
      { status: 'rejected', reason: { code: 'invalid_request', status: 400 } },
      { status: 'rejected', reason: { code: 'invalid_request', status: 400 } },
    ]);
  });

  it('sends a check alone to /check, and a 429 is a denial, not an error', async () => {
    const { fetch, sent } = scriptedFetch(() => [429, denied]);
    const client = createClient({ url: 'http://memgate', fetch });
    expect(await client.check('e', 'f')).toEqual({ ...denied, source: 'server' });
    expect(sent.map(({ url }) => url)).toEqual(['http://memgate/check']);
  });

  it('treats a batch answered with the wrong number of elements as memgate not answering', async () => {
    const { fetch } = scriptedFetch(() => [200, [allowed]]);
    const client = createClient({ url: 'http://memgate', fetch });
    const results = await Promise.all([client.check('e', 'a'), client.check('e', 'b')]);
    expect(results.every((d) => d.degraded && d.allowed && d.source === 'local')).toBe(true);
  });
});
