// Certificates for the TLS tests, made by the openssl command (Debian's openssl; the tests'
// prerequisites install it): an authority, a server certificate for 127.0.0.1 and localhost,
// a client certificate with a SPIFFE-style URI, and a second authority nothing trusts.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface CertificateFiles {
  /** The authority that signed `server` and `client`. */
  readonly ca: string;
  readonly server: { readonly cert: string; readonly key: string };
  readonly client: { readonly cert: string; readonly key: string; readonly san: string };
  /** An authority of its own with a server certificate for 127.0.0.1: trusted by no test. */
  readonly stranger: { readonly ca: string; readonly cert: string; readonly key: string };
  /** A server certificate `ca` signed that names another host only (`elsewhere.example`). */
  readonly otherHost: { readonly cert: string; readonly key: string };
}

function openssl(folder: string, ...args: string[]): void {
  execFileSync('openssl', args, { cwd: folder, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** An authority `name`.pem with its key `name`.key. */
function authority(folder: string, name: string): void {
  openssl(
    folder,
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.pem`,
  );
}

/** A certificate `name`.pem signed by `ca`, with the subject alternative names `san`. */
function signed(folder: string, ca: string, name: string, san: string): void {
  openssl(
    folder,
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    `/CN=${name}`,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
  );
  writeFileSync(join(folder, `${name}.ext`), `subjectAltName=${san}\n`);
  openssl(
    folder,
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.pem`,
    '-CAkey',
    `${ca}.key`,
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
    '-out',
    `${name}.pem`,
  );
}

/** A fresh set in a temporary folder (about a second of openssl). */
export function makeCertificates(): CertificateFiles {
  const folder = mkdtempSync(join(tmpdir(), 'memgate-certs-'));
  const at = (file: string) => join(folder, file);
  authority(folder, 'ca');
  signed(folder, 'ca', 'server', 'IP:127.0.0.1,DNS:localhost');
  const san = 'spiffe://memgate.test/envoy';
  signed(folder, 'ca', 'client', `URI:${san}`);
  signed(folder, 'ca', 'other-host', 'DNS:elsewhere.example');
  authority(folder, 'stranger-ca');
  signed(folder, 'stranger-ca', 'stranger', 'IP:127.0.0.1,DNS:localhost');
  return {
    ca: at('ca.pem'),
    server: { cert: at('server.pem'), key: at('server.key') },
    client: { cert: at('client.pem'), key: at('client.key'), san },
    stranger: { ca: at('stranger-ca.pem'), cert: at('stranger.pem'), key: at('stranger.key') },
    otherHost: { cert: at('other-host.pem'), key: at('other-host.key') },
  };
}
