/**
 * The defaults memgate/client and the framework entries share with the service: the client's
 * own, the batch limits that are the wire contract between them, and how a client address is
 * counted. config/defaults.ts spreads them into DEFAULTS; src/shared/ imports nothing of
 * memgate, so the client can be packaged without the service.
 */
export const CLIENT_DEFAULTS = {
  /**
   * The prefix an IPv6 client is counted by, where memgate takes the address itself (/gate's
   * client-ip, the express and fastify entries): a customer is usually given a /56 (or a /48
   * or /64), and can use any address in it. express-rate-limit 8's default too.
   */
  ipv6Subnet: 56,
  /** Checks (and leases) one POST /check/batch (or /lease/batch) may carry. */
  batchMaxChecks: 100,
  /**
   * Largest body of a batch: 100 checks of 1024-byte features as JSON.stringify writes them
   * (at most 2 bytes a byte: a quote or backslash escaped) fit; features of control
   * characters, 6 bytes a byte escaped, fit 40 to a batch. Kept this small because a body is
   * read whole before it can be refused: 800 KB cost up to 9 ms of CPU each (oversized bench).
   */
  batchBodyLimitBytes: 256 * 1024,

  /** memgate/client: how long a request to memgate may take before its checks are degraded. */
  clientTimeoutMs: 500,
  /** memgate/client: what a check answers when memgate cannot be reached. */
  clientOnError: 'allow',
  /** memgate/client: how long checks wait for others to share a request; 0 is the current tick. */
  clientBatchWindowMs: 0,
  /** memgate/client: the longest batchWindowMs may be: a check should not wait on others for longer. */
  clientMaxBatchWindowMs: 10,
  /** memgate/client: keep-alive connections of the undici pool, in Node. */
  clientConnections: 10,
  /** memgate/client: after memgate could not be reached, how long checks are degraded at once before one probes. */
  clientErrorBackoffMs: 1000,
  /** memgate/client: denials (event, feature and cost) remembered at once; the oldest go first. */
  clientMaxLocalDenials: 10_000,
  /** memgate/client: units a lease asks for (0: no leases). */
  clientLeaseUnits: 0,
  /** memgate/client: a lease ends this long before its life says, so that its return arrives in time. */
  clientLeaseMarginMs: 250,
  /** memgate/client: leases held at once; past it the oldest is returned early. */
  clientMaxLeases: 10_000,
} as const;
