// TLS on the HTTP server (MEMGATE_TLS_*): Node's https options from the listener's certificates,
// and each renewed set handed to the server (listener-certificates.ts reads the files).
import type { SecureContextOptions, Server as TlsServer } from 'node:tls';
import type { CertificateSet, ListenerCertificates } from '../listener-certificates.js';

function contextOptions({ cert, key, ca }: CertificateSet): SecureContextOptions {
  return { cert, key, ...(ca ? { ca } : {}) };
}

export type HttpsOptions = SecureContextOptions & { requestCert: boolean; rejectUnauthorized: boolean };

/** Node's https options serving `set`: with a client authority, a client without a certificate it signed fails the handshake. */
export function httpsOptions(set: CertificateSet): HttpsOptions {
  const mutual = set.ca !== undefined;
  return { ...contextOptions(set), requestCert: mutual, rejectUnauthorized: mutual };
}

/** Serves each new set of `certificates` to the server's new connections; returns the stop. */
export function serveRenewedCertificates(
  server: Pick<TlsServer, 'setSecureContext'>,
  certificates: ListenerCertificates,
): () => void {
  return certificates.subscribe((set) => {
    server.setSecureContext(contextOptions(set));
  });
}
