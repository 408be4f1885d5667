import type { Logger } from 'pino';

/**
 * What the operator reads of a listener's certificate files read again (listener-certificates.ts):
 * a set that could not be used, which leaves the one in use, and a new set put in use.
 * `prefix` names the settings (MEMGATE_TLS, MEMGATE_GRPC_TLS).
 */
export function certificateLog(logger: Pick<Logger, 'error' | 'info'>, prefix: string) {
  return {
    onError: (error: Error) => {
      logger.error(
        { err: error },
        `${prefix}_* files could not be used again; the certificate in use stays: ${error.message}`,
      );
    },
    onChange: () => {
      logger.info(`${prefix}_* files changed: new connections get the new certificate`);
    },
  };
}
