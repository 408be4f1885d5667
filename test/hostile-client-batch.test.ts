// Hostile batches against a real memgate process on a real memcached: 100 checks of one
// feature, refused items among good ones, a refused batch, and memgate/client facing a
// server that answers a batch with garbage.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../src/client/index.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';
import { startServiceProcess, type ServiceProcess } from './helpers/service-process.js';

const POLICIES = `events:
  api:
    limits:
      - { limit: 10, window: 1m }
`;

const memcached = useMemcached();
let memgate: ServiceProcess;
beforeAll(async () => {
  const folder = mkdtempSync(join(tmpdir(), 'memgate-hostile-batch-'));
  writeFileSync(join(folder, 'policies.yaml'), POLICIES);
  memgate = await startServiceProcess({
    MEMCACHED_SERVERS: memcached().servers,
    MEMGATE_CONFIG: join(folder, 'policies.yaml'),
    MEMGATE_KEY_PREFIX: uniquePrefix(),
  });
});
afterAll(async () => {
  await memgate.stop();
});

async function batch(body: unknown): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${memgate.url}/check/batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

async function decisionsCounted(): Promise<number> {
  const text = await (await fetch(`${memgate.url}/metrics`)).text();
  let total = 0;
  for (const [, labels, value] of text.matchAll(/^memgate_decisions_total\{([^}]*)\} (\S+)$/gm))
    if (labels?.includes('event="api"') && labels.includes('kind="check"')) total += Number(value);
  return total;
}

describe('hostile batches', () => {
  it('100 checks of one feature in one batch admit exactly the limit, each counted once in the metrics', async () => {
    const before = await decisionsCounted();
    const answer = await batch(Array.from({ length: 100 }, () => ({ event: 'api', feature: 'same' })));
    expect(answer.status).toBe(200);
    const decisions = answer.body as { allowed: boolean }[];
    expect(decisions).toHaveLength(100);
    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(10);
    expect((await decisionsCounted()) - before).toBe(100);
  });

  it('refused items answer alone and count nothing; a batch with a malformed item counts nothing at all', async () => {
    const who = 'mixed';
    const items = [
      { event: 'api', feature: who },
      { event: 'api', feature: who, cost: 0 },
      { event: 'nope', feature: who },
      { event: 'api', feature: 'x'.repeat(2000) },
      { event: 'api', feature: who, cost: 11 },
      { event: 'api', feature: who },
    ];
    const answer = await batch(items);
    expect(answer.status).toBe(200);
    const statuses = (answer.body as { status?: number; allowed?: boolean }[]).map((item) => item.status ?? 200);
    expect(statuses).toEqual([200, 400, 400, 400, 400, 200]);
    const refused = await batch([{ event: 'api', feature: who }, { event: 'api' }]);
    expect(refused.status).toBe(400);
    const peek = await fetch(`${memgate.url}/peek?event=api&feature=${who}`);
    const { limits } = (await peek.json()) as { limits: { remaining: number }[] };
    expect(limits[0]?.remaining).toBe(8);
  });

  it('memgate/client answers a garbage batch answer by onError, and never throws it at the caller', async () => {
    const garbage = ['[]', '[{"allowed":true,"limits":[]}]', '{"allowed":true}', 'not json', '[null,null,null]'];
    let next = 0;
    const server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(garbage[next++ % garbage.length]);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const client = createClient({ url: `http://127.0.0.1:${port}`, onError: 'deny', errorBackoffMs: 0 });
    try {
      // Features of their own each round: a degraded denial is repeated locally for its second.
      for (const body of garbage) {
        const decisions = await Promise.all([1, 2, 3].map((n) => client.check('api', `${body}-${n}`)));
        for (const decision of decisions) expect(decision).toMatchObject({ allowed: false, degraded: true });
      }
      expect(next, 'every garbage answer was sent').toBe(garbage.length);
    } finally {
      await client.close();
      server.closeAllConnections();
      server.close();
    }
  });
});
