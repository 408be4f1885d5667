import ipaddr from 'ipaddr.js';
import { CLIENT_DEFAULTS } from './defaults.js';

/**
 * How a client address is counted, where memgate takes the address itself (/gate's client-ip,
 * the express and fastify entries): an IPv4 address as it is (an IPv4-mapped IPv6 address,
 * `::ffff:203.0.113.7`, as the IPv4 address it carries); an IPv6 address by its network of
 * `ipv6Subnet` bits, written `2001:db8:0:1200::/56`, since one customer can use every address
 * of its prefix. `false` (or 128) counts each IPv6 address alone. Anything that is not an IP
 * address is returned as it is: the caller decides whether to refuse it.
 */
export function clientAddressFeature(address: string, ipv6Subnet: number | false = CLIENT_DEFAULTS.ipv6Subnet): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4' || ipv6Subnet === false || ipv6Subnet === 128) return parsed.toString();
  const network = ipaddr.IPv6.networkAddressFromCIDR(`${parsed.toString()}/${ipv6Subnet}`);
  return `${network.toString()}/${ipv6Subnet}`;
}

/** Whether `value` can be an ipv6Subnet option: a whole number of bits from 1 to 128, or false. */
export function validIpv6Subnet(value: unknown): value is number | false {
  return value === false || (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 128);
}
