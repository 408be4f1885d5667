// The Memcached servers from a DNS SRV record (MEMCACHED_SRV, upstream's MEMCACHE_SRV): a real
// DNS server (dns2, over UDP) answers the record, and the service looks it up as node's
// resolver does, against two memcached processes.
import { promises as dns } from 'node:dns';
import { Packet, UDPServer } from 'dns2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serversFromSrv } from '../src/store/memcached/srv.js';
import { rlsClient } from '../scripts/lib/rls-client.js';
import { loadSettings } from '../src/config/settings.js';
import { startService } from '../src/service.js';
import { capturedLogger, envoyConfigFile } from './helpers/envoy-service.js';
import { startMemcachedProcess, uniquePrefix, type MemcachedProcess } from './helpers/memcached.js';
import { awayFromWindowEnd } from './helpers/window.js';

const RECORD = '_memcache._tcp.memgate.test';
let server: UDPServer;
let dnsPort = 0;
let memcached: MemcachedProcess[] = [];
const previousServers = dns.getServers();

beforeAll(async () => {
  memcached = await Promise.all([startMemcachedProcess(), startMemcachedProcess()]);
  server = new UDPServer((request, send) => {
    const response = Packet.createResponseFromRequest(request);
    const [question] = request.questions;
    if (question?.name === RECORD && question.type === Packet.TYPE.SRV)
      for (const { port } of memcached)
        response.answers.push({
          name: RECORD,
          type: Packet.TYPE.SRV,
          class: Packet.CLASS.IN,
          ttl: 60,
          priority: 10,
          weight: 10,
          port,
          target: '127.0.0.1',
        } as (typeof response.answers)[number]);
    void send(response);
  });
  await server.listen(0, '127.0.0.1');
  dnsPort = (server.address() as { port: number }).port;
  // Node's default resolver asks this server, as /etc/resolv.conf's would be asked.
  dns.setServers([`127.0.0.1:${dnsPort}`]);
});
afterAll(async () => {
  dns.setServers(previousServers);
  server.close();
  await Promise.all(memcached.map((one) => one.stop()));
});

describe('Memcached servers from a DNS SRV record', () => {
  it("reads the record's targets, sorted by host:port, and names a record that does not resolve", async () => {
    const expected = memcached
      .map(({ port }) => `127.0.0.1:${port}`)
      .sort()
      .join(',');
    expect(await serversFromSrv(RECORD)).toBe(expected);
    await expect(serversFromSrv('_memcache._tcp.nowhere.test')).rejects.toThrow(
      /^MEMCACHED_SRV _memcache._tcp.nowhere.test could not be looked up \(E[A-Z]+\)$/,
    );
  });

  it("counts on the record's servers: two instances given upstream's MEMCACHE_SRV share every limit", async () => {
    const config = await envoyConfigFile(
      'domain: edge\ndescriptors:\n  - key: client\n    rate_limit: { unit: minute, requests_per_unit: 3 }\n',
    );
    const prefix = uniquePrefix();
    // As an upstream deployment would start it: MEMCACHE_SRV and nothing else naming the servers.
    const start = async () => {
      const settings = loadSettings(
        {
          PORT: '0',
          HOST: '127.0.0.1',
          MEMGATE_GRPC_PORT: '0',
          MEMGATE_ENVOY_CONFIG: config,
          MEMGATE_KEY_PREFIX: prefix,
          MEMGATE_USAGE_DB: 'off',
          MEMCACHE_SRV: RECORD,
        },
        [],
      );
      const { lines, logger } = capturedLogger();
      const service = await startService(settings, logger);
      return { service, lines, client: rlsClient(`127.0.0.1:${String(service.grpc?.port)}`) };
    };
    const [a, b] = [await start(), await start()];
    try {
      expect(a.lines.find((line) => line.includes('listening on'))).toContain(
        `memcached ${memcached
          .map(({ port }) => `127.0.0.1:${port}`)
          .sort()
          .join(',')}`,
      );
      // A minute's fixed window: the four calls below must fall in one.
      await awayFromWindowEnd(60);
      const codes: string[] = [];
      for (const { client } of [a, b, a, b])
        codes.push(
          (
            await client.shouldRateLimit({
              domain: 'edge',
              descriptors: [{ entries: [{ key: 'client', value: 'srv' }] }],
            })
          ).overall_code,
        );
      expect(codes).toEqual(['OK', 'OK', 'OK', 'OVER_LIMIT']);
    } finally {
      for (const one of [a, b]) {
        one.client.close();
        await one.service.close();
      }
    }
  });
});
