// MEMCACHED_SRV (upstream's MEMCACHE_SRV): the Memcached servers from a DNS SRV record, looked
// up once at start. Sorted by `host:port`, as upstream sorts them, so that every instance that
// sees the same record places keys on the same ring.
import { promises as dns, type SrvRecord } from 'node:dns';

/** A record that cannot give memgate its servers; the message names it and why. */
export class SrvLookupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SrvLookupError';
  }
}

/** How long one DNS server may take to answer, and how many times it is asked: a start waits for at most about their product per server. */
const LOOKUP_TIMEOUT_MS = 2000;
const LOOKUP_TRIES = 2;

/** node's resolver with the servers it has now (the system's, or what dns.setServers gave), but a bound on the wait. */
function boundedLookup(name: string): Promise<SrvRecord[]> {
  const resolver = new dns.Resolver({ timeout: LOOKUP_TIMEOUT_MS, tries: LOOKUP_TRIES });
  resolver.setServers(dns.getServers());
  return resolver.resolveSrv(name);
}

/** `host:port,…` of the record's targets, sorted; `resolveSrv` is node's unless a test gives one. */
export async function serversFromSrv(
  name: string,
  resolveSrv: (name: string) => Promise<SrvRecord[]> = boundedLookup,
): Promise<string> {
  let records: SrvRecord[];
  try {
    records = await resolveSrv(name);
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    throw new SrvLookupError(`MEMCACHED_SRV ${name} could not be looked up (${code ?? message})`);
  }
  if (records.length === 0) throw new SrvLookupError(`MEMCACHED_SRV ${name} names no server`);
  // An IPv6 literal target, rare in SRV, goes in brackets as MEMCACHED_SERVERS writes it.
  const servers = records.map(
    ({ name: target, port }) => `${target.includes(':') ? `[${target}]` : target.replace(/\.$/, '')}:${port}`,
  );
  return [...new Set(servers)].sort().join(',');
}
