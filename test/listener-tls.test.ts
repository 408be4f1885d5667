// TLS on memgate's listeners: gRPC (MEMGATE_GRPC_TLS_*, and upstream's GRPC_SERVER_USE_TLS with
// its files) and HTTP (MEMGATE_TLS_*), mutual TLS and a required client name, and a renewed
// certificate served without a restart. Real grpc-js and node:https clients over sockets.
import { copyFileSync, mkdtempSync } from 'node:fs';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { oneDescriptor, rlsClient, type RlsClient } from '../scripts/lib/rls-client.js';
import { makeCertificates, type CertificateFiles } from './helpers/certificates.js';
import { useEnvoyServices } from './helpers/envoy-service.js';
import { useMemcached } from './helpers/memcached.js';
import { awayFromWindowEnd } from './helpers/window.js';

const memcached = useMemcached();
const CONFIG = `
domain: edge
descriptors:
  - key: client
    rate_limit: { unit: minute, requests_per_unit: 2 }
`;
const start = useEnvoyServices(memcached, CONFIG);

let certs: CertificateFiles;
beforeAll(() => {
  certs = makeCertificates();
});

const pem = (path: string) => readFileSync(path);

/** A client trusting `ca`, presenting `client` when given. */
function tlsClient(address: string, ca: string, client?: { cert: string; key: string }): RlsClient {
  const credentials = client
    ? grpc.credentials.createSsl(pem(ca), pem(client.key), pem(client.cert))
    : grpc.credentials.createSsl(pem(ca));
  return rlsClient(address, credentials);
}

/** The gRPC status code of a call that failed, or its overall code. */
async function outcome(client: RlsClient, value: string): Promise<string | number> {
  try {
    return (await client.shouldRateLimit(oneDescriptor('edge', ['client', value]))).overall_code;
  } catch (error) {
    return (error as grpc.ServiceError).code;
  } finally {
    client.close();
  }
}

/** GET `path` over HTTPS trusting `ca`: the status, or the connection's error code. */
function httpsStatus(url: string, ca: string, client?: { cert: string; key: string }): Promise<number | string> {
  return new Promise((resolve) => {
    const get = request(url, {
      ca: pem(ca),
      ...(client ? { cert: pem(client.cert), key: pem(client.key) } : {}),
      agent: false,
    });
    get.on('response', (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    get.on('error', (error: NodeJS.ErrnoException) => {
      resolve(error.code ?? error.message);
    });
    get.end();
  });
}

describe('gRPC over TLS', () => {
  it('answers a client that trusts its authority, and no client in clear or trusting another', async () => {
    const { address } = await start({
      env: { MEMGATE_GRPC_TLS_CERT: certs.server.cert, MEMGATE_GRPC_TLS_KEY: certs.server.key },
    });
    // Three calls against a limit of 2 a minute: one minute must hold them.
    await awayFromWindowEnd(60);
    expect(await outcome(tlsClient(address, certs.ca), 'a')).toBe('OK');
    expect(await outcome(rlsClient(address), 'a')).toBe(grpc.status.UNAVAILABLE);
    expect(await outcome(tlsClient(address, certs.stranger.ca), 'a')).toBe(grpc.status.UNAVAILABLE);
    // Counted as any call: the limit of 2 a minute holds over TLS.
    expect(await outcome(tlsClient(address, certs.ca), 'a')).toBe('OK');
    expect(await outcome(tlsClient(address, certs.ca), 'a')).toBe('OVER_LIMIT');
  });

  it("runs an upstream deployment's mutual TLS unchanged: the client's certificate and its name are required", async () => {
    const env = {
      GRPC_SERVER_USE_TLS: 'true',
      GRPC_SERVER_TLS_CERT: certs.server.cert,
      GRPC_SERVER_TLS_KEY: certs.server.key,
      GRPC_CLIENT_TLS_CACERT: certs.ca,
      GRPC_CLIENT_TLS_SAN: certs.client.san,
    };
    const { address, lines } = await start({ env });
    expect(lines.find((line) => line.includes('listening on'))).toMatch(/gRPC on 127\.0\.0\.1:\d+ \(mutual TLS\)/);
    expect(await outcome(tlsClient(address, certs.ca, certs.client), 'b')).toBe('OK');
    // No certificate: refused at the handshake.
    expect(await outcome(tlsClient(address, certs.ca), 'b')).toBe(grpc.status.UNAVAILABLE);
    // A certificate of another authority: refused at the handshake too.
    expect(await outcome(tlsClient(address, certs.ca, certs.stranger), 'b')).toBe(grpc.status.UNAVAILABLE);
    // Health answers the same client, and asks the same of it.
    const health = tlsClient(address, certs.ca, certs.client);
    expect(await health.health('ratelimit')).toBe('SERVING');
    health.close();
  });

  it('answers UNAUTHENTICATED to a client whose certificate lacks the required name, and counts nothing for it', async () => {
    const { address, url } = await start({
      env: {
        MEMGATE_GRPC_TLS_CERT: certs.server.cert,
        MEMGATE_GRPC_TLS_KEY: certs.server.key,
        MEMGATE_GRPC_TLS_CLIENT_CA: certs.ca,
        MEMGATE_GRPC_TLS_CLIENT_SAN: 'spiffe://memgate.test/someone-else',
      },
    });
    // The server certificate signed by the same authority serves as a client certificate without that name.
    const refused = tlsClient(address, certs.ca, certs.client);
    await expect(refused.shouldRateLimit(oneDescriptor('edge', ['client', 'c']))).rejects.toMatchObject({
      code: grpc.status.UNAUTHENTICATED,
      details:
        'the client certificate does not name spiffe://memgate.test/someone-else among its subject alternative names',
    });
    refused.close();
    // Refused before it was read: no decision of that descriptor's event.
    expect(await (await fetch(`${url}/metrics`)).text()).not.toContain('event="envoy:edge.client"');
  });

  it('serves a renewed certificate to new connections without a restart', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'memgate-renew-'));
    const cert = join(folder, 'tls.crt');
    const key = join(folder, 'tls.key');
    copyFileSync(certs.server.cert, cert);
    copyFileSync(certs.server.key, key);
    // A client value per call: each is the first of its own limit of 2.
    let calls = 0;
    const fresh = () => `renew-${String(++calls)}`;
    const { address, lines } = await start({
      env: { MEMGATE_GRPC_TLS_CERT: cert, MEMGATE_GRPC_TLS_KEY: key, MEMGATE_TLS_REFRESH_S: '1' },
    });
    expect(await outcome(tlsClient(address, certs.ca), fresh())).toBe('OK');
    // Renewed by another authority (as a rotation would be), key first as a mounted secret may
    // change: the new key beside the old certificate is refused, the old pair served meanwhile.
    copyFileSync(certs.stranger.key, key);
    await expect
      .poll(() => lines.some((line) => line.includes('MEMGATE_GRPC_TLS_* files could not be used again')), {
        timeout: 5000,
      })
      .toBe(true);
    expect(await outcome(tlsClient(address, certs.ca), fresh())).toBe('OK');
    copyFileSync(certs.stranger.cert, cert);
    await expect
      .poll(() => outcome(tlsClient(address, certs.stranger.ca), fresh()), { timeout: 8000, interval: 250 })
      .toBe('OK');
    expect(await outcome(tlsClient(address, certs.ca), fresh())).toBe(grpc.status.UNAVAILABLE);
  });
});

describe('HTTP over TLS', () => {
  it('serves HTTPS with MEMGATE_TLS_CERT and MEMGATE_TLS_KEY, and nothing in clear', async () => {
    const { service } = await start({
      env: { MEMGATE_TLS_CERT: certs.server.cert, MEMGATE_TLS_KEY: certs.server.key },
    });
    const { port } = service.app.server.address() as { port: number };
    expect(await httpsStatus(`https://127.0.0.1:${port}/healthz`, certs.ca)).toBe(200);
    expect(await httpsStatus(`https://localhost:${port}/check?event=envoy:edge.client&feature=h`, certs.ca)).toBe(200);
    expect(await httpsStatus(`https://127.0.0.1:${port}/healthz`, certs.stranger.ca)).toBe(
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    );
    const clear = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (response) => response.status,
      () => 'failed',
    );
    expect(clear).not.toBe(200);
  });

  it('requires a client certificate its authority signed with MEMGATE_TLS_CLIENT_CA', async () => {
    const { service } = await start({
      env: { MEMGATE_TLS_CERT: certs.server.cert, MEMGATE_TLS_KEY: certs.server.key, MEMGATE_TLS_CLIENT_CA: certs.ca },
    });
    const { port } = service.app.server.address() as { port: number };
    const url = `https://127.0.0.1:${port}/healthz`;
    expect(await httpsStatus(url, certs.ca, certs.client)).toBe(200);
    expect(await httpsStatus(url, certs.ca)).not.toBe(200);
    expect(await httpsStatus(url, certs.ca, certs.stranger)).not.toBe(200);
  });

  it('serves a renewed certificate to new connections without a restart', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'memgate-renew-http-'));
    const cert = join(folder, 'tls.crt');
    const key = join(folder, 'tls.key');
    copyFileSync(certs.server.cert, cert);
    copyFileSync(certs.server.key, key);
    const { service } = await start({
      env: { MEMGATE_TLS_CERT: cert, MEMGATE_TLS_KEY: key, MEMGATE_TLS_REFRESH_S: '1' },
    });
    const { port } = service.app.server.address() as { port: number };
    const url = `https://127.0.0.1:${port}/healthz`;
    expect(await httpsStatus(url, certs.ca)).toBe(200);
    copyFileSync(certs.stranger.key, key);
    copyFileSync(certs.stranger.cert, cert);
    await expect.poll(() => httpsStatus(url, certs.stranger.ca), { timeout: 8000, interval: 250 }).toBe(200);
    expect(await httpsStatus(url, certs.ca)).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
  });
});
