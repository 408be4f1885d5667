// TLS on the gRPC server (MEMGATE_GRPC_TLS_*, or upstream's GRPC_SERVER_TLS_*): node:http2's secure
// server from the listener's certificates (listener-certificates.ts, read again every refresh), each
// renewed set served to new connections, and the client name a call's certificate must carry.
import type { TLSSocket } from 'node:tls';
import { alternativeNames } from '../config/tls.js';
import { httpsOptions, type HttpsOptions } from '../http/tls.js';
import type { ListenerCertificates } from '../listener-certificates.js';

/** The secure server's options for the set in use: HTTP/2 only, as gRPC is. */
export function secureServerOptions(certificates: ListenerCertificates): HttpsOptions & { allowHTTP1: false } {
  return { ...httpsOptions(certificates.current), allowHTTP1: false };
}

/**
 * With a client name required (MEMGATE_GRPC_TLS_CLIENT_SAN, upstream's GRPC_CLIENT_TLS_SAN), the
 * reason a connection's peer certificate does not do; undefined when it does. The handshake has
 * already checked the certificate's chain against the client authority.
 */
export function missingClientName(socket: TLSSocket, wanted: string): string | undefined {
  const names = alternativeNames(socket.getPeerCertificate().subjectaltname);
  return names.includes(wanted)
    ? undefined
    : `the client certificate does not name ${wanted} among its subject alternative names`;
}
