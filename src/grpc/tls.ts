// TLS on the gRPC server (MEMGATE_GRPC_TLS_*, or upstream's GRPC_SERVER_TLS_*): the listener's
// certificates (listener-certificates.ts, read again every refresh) handed to grpc-js through its
// certificate-provider interface, so that a renewed certificate is served to new connections.
import * as grpc from '@grpc/grpc-js';
import { alternativeNames } from '../config/tls.js';
import type { CertificateSet, ListenerCertificates } from '../listener-certificates.js';

/**
 * `certificates` as grpc-js's provider of both the server's own pair and the clients' authority.
 * A listener hears the set in use on the next tick, as grpc-js's own providers do: grpc-js
 * registers its server's watcher just after adding the listener, and the certificates must
 * reach that watcher before the first connection is accepted.
 */
function provider(certificates: ListenerCertificates): grpc.experimental.CertificateProvider {
  const unsubscribes = new Map<unknown, () => void>();
  const add = <Update>(listener: (update: Update | null) => void, updateOf: (set: CertificateSet) => Update | null) => {
    const tell = (set: CertificateSet) => {
      listener(updateOf(set));
    };
    unsubscribes.set(listener, certificates.subscribe(tell));
    process.nextTick(tell, certificates.current);
  };
  const remove = (listener: unknown) => {
    unsubscribes.get(listener)?.();
    unsubscribes.delete(listener);
  };
  return {
    addIdentityCertificateListener: (listener) => {
      add(listener, (set) => ({ certificate: set.cert, privateKey: set.key }));
    },
    addCaCertificateListener: (listener) => {
      add(listener, (set) => (set.ca ? { caCertificate: set.ca } : null));
    },
    removeIdentityCertificateListener: remove,
    removeCaCertificateListener: remove,
  };
}

/** The server's credentials: in clear without certificates. */
export function serverCredentials(certificates: ListenerCertificates | undefined): grpc.ServerCredentials {
  if (!certificates) return grpc.ServerCredentials.createInsecure();
  const mutual = certificates.current.ca !== undefined;
  const served = provider(certificates);
  // grpc-js's declaration names the first two parameters the other way round from what it does
  // with them: the first is the server's own certificate, the second the clients' authority.
  return grpc.experimental.createCertificateProviderServerCredentials(served, mutual ? served : null, mutual);
}

/**
 * With a client name required (MEMGATE_GRPC_TLS_CLIENT_SAN, upstream's GRPC_CLIENT_TLS_SAN),
 * a call whose peer certificate lacks it is answered UNAUTHENTICATED before it is read. The
 * handshake has already checked the certificate's chain against the client authority.
 */
export function clientNameInterceptors(wanted: string | undefined): grpc.ServerInterceptor[] {
  if (wanted === undefined) return [];
  return [
    (_method, call) =>
      new grpc.ServerInterceptingCall(call, {
        start: (next) => {
          next({
            onReceiveMetadata: (metadata, nextMetadata) => {
              const names = alternativeNames(call.getAuthContext().sslPeerCertificate?.subjectaltname);
              if (names.includes(wanted)) nextMetadata(metadata);
              else
                call.sendStatus({
                  code: grpc.status.UNAUTHENTICATED,
                  details: `the client certificate does not name ${wanted} among its subject alternative names`,
                });
            },
          });
        },
      }),
  ];
}
