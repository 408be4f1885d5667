// TLS to Memcached (MEMCACHED_TLS_*, and upstream's MEMCACHE_TLS_*): against Debian's memcached
// started with -Z, with certificates the openssl command made for this file.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../src/store/counter-store.js';
import { createMemcachedStore } from '../src/store/memcached/memcached-store.js';
import type { MemcachedTls } from '../src/config/tls.js';
import { makeCertificates, type CertificateFiles } from './helpers/certificates.js';
import { startMemcachedProcess, uniquePrefix, type MemcachedProcess } from './helpers/memcached.js';
import { startServiceProcess, type ServiceProcess } from './helpers/service-process.js';

let certs: CertificateFiles;
const servers: MemcachedProcess[] = [];
const services: ServiceProcess[] = [];

beforeAll(() => {
  certs = makeCertificates();
});
afterAll(async () => {
  await Promise.all(services.map((service) => service.stop()));
  await Promise.all(servers.map((server) => server.stop()));
});

async function tlsMemcached(files: { cert: string; key: string; clientCa?: string }): Promise<MemcachedProcess> {
  const server = await startMemcachedProcess({ tls: files });
  servers.push(server);
  return server;
}

const pem = (path: string) => readFileSync(path);

/** One increment and a read of it through a store with `tls`: the count, or the store's error. */
async function countOnce(server: MemcachedProcess, tls: MemcachedTls | undefined): Promise<number | Error> {
  const store = createMemcachedStore({ servers: server.servers, tls, timeoutMs: 1000 });
  const key = `${uniquePrefix()}:{t}:k`;
  try {
    return (await store.incrementAndRead([{ key, delta: 1, ttlSeconds: 60 }], [key])).read[0] ?? -1;
  } catch (error) {
    return error as Error;
  } finally {
    await store.close();
  }
}

describe('memcached over TLS', () => {
  it('counts through a server whose certificate the given authority signed, and refuses one it did not', async () => {
    const server = await tlsMemcached(certs.server);
    expect(await countOnce(server, { ca: pem(certs.ca), verifyHostname: true })).toBe(1);
    // Node's bundled authorities do not know this one: down, with the reason, nothing counted.
    const untrusted = await countOnce(server, { verifyHostname: true });
    expect(untrusted).toBeInstanceOf(StoreUnavailableError);
    expect(String(untrusted)).toMatch(/unable to verify the first certificate/);
    // In clear against a TLS-only server: it resets the connection.
    const inClear = await countOnce(server, undefined);
    expect(inClear).toBeInstanceOf(StoreUnavailableError);
    expect(String(inClear)).toMatch(/ECONNRESET|closed/);
  });

  it('checks the host name unless told not to, and the chain either way', async () => {
    const elsewhere = await tlsMemcached(certs.otherHost);
    const named = await countOnce(elsewhere, { ca: pem(certs.ca), verifyHostname: true });
    expect(String(named)).toMatch(/IP: 127\.0\.0\.1 is not in the cert's list/);
    expect(await countOnce(elsewhere, { ca: pem(certs.ca), verifyHostname: false })).toBe(1);
    const stranger = await tlsMemcached(certs.stranger);
    expect(String(await countOnce(stranger, { ca: pem(certs.ca), verifyHostname: false }))).toMatch(
      /unable to verify the first certificate/,
    );
  });

  it('presents the client certificate a server requires (mutual TLS)', async () => {
    const server = await tlsMemcached({ ...certs.server, clientCa: certs.ca });
    const withoutCertificate = await countOnce(server, { ca: pem(certs.ca), verifyHostname: true });
    expect(withoutCertificate).toBeInstanceOf(StoreUnavailableError);
    expect(String(withoutCertificate)).toMatch(/certificate required/);
    expect(
      await countOnce(server, {
        ca: pem(certs.ca),
        cert: pem(certs.client.cert),
        key: pem(certs.client.key),
        verifyHostname: true,
      }),
    ).toBe(1);
  });

  it("serves an upstream deployment's MEMCACHE_TLS settings unchanged: two instances share the counts", async () => {
    const server = await tlsMemcached({ ...certs.server, clientCa: certs.ca });
    const env = {
      MEMCACHE_HOST_PORT: server.servers,
      MEMCACHE_TLS: 'true',
      MEMCACHE_TLS_CACERT: certs.ca,
      MEMCACHE_TLS_CLIENT_CERT: certs.client.cert,
      MEMCACHE_TLS_CLIENT_KEY: certs.client.key,
      MEMGATE_KEY_PREFIX: uniquePrefix(),
    };
    const [a, b] = await Promise.all([startServiceProcess(env), startServiceProcess(env)]);
    services.push(a, b);
    expect((await fetch(`${a.url}/readyz`)).status).toBe(200);
    const feature = `tls-${Date.now()}`;
    const statuses: number[] = [];
    // The bundled policy's login event: 5 a minute.
    for (const service of [a, b, a, b, a, b])
      statuses.push((await fetch(`${service.url}/check?event=login&feature=${feature}`)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expect(a.logs.some((line) => String(line.msg).includes('MEMCACHE_TLS as MEMCACHED_TLS'))).toBe(true);
    expect(a.logs.find((line) => String(line.msg).includes('listening on'))?.msg).toContain(
      `memcached ${server.servers} (timeout 250 ms, TLS)`,
    );
  });

  it("names a certificate file it cannot read, or a key that is not its certificate's, at start, and starts nothing", async () => {
    const refused = await startServiceProcess({
      MEMCACHED_SERVERS: '127.0.0.1:1',
      MEMCACHED_TLS: 'on',
      MEMCACHED_TLS_CA: '/nonexistent/ca.pem',
    }).then(
      (service) => {
        services.push(service);
        return new Error('started');
      },
      (error: unknown) => error as Error,
    );
    expect(refused.message).toContain('MEMCACHED_TLS_CA=/nonexistent/ca.pem: cannot be read (ENOENT)');
    // A client key that is not its certificate's: named at start, not a failure of every check.
    const mismatched = await startServiceProcess({
      MEMCACHED_SERVERS: '127.0.0.1:1',
      MEMCACHED_TLS: 'on',
      MEMCACHED_TLS_CERT: certs.client.cert,
      MEMCACHED_TLS_KEY: certs.server.key,
    }).then(
      (service) => {
        services.push(service);
        return new Error('started');
      },
      (error: unknown) => error as Error,
    );
    expect(mismatched.message).toMatch(
      /MEMCACHED_TLS_CERT, MEMCACHED_TLS_KEY: cannot be used for TLS \(.*key values mismatch/,
    );
  });
});
