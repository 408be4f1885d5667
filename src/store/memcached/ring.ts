import { createHash } from 'node:crypto';

/**
 * The consistent-hash ring that places keys on Memcached servers: ketama, exactly as the
 * `hashring` package (3.x) builds it from a list of `host:port` labels with its default
 * options, which memgate used before this module.
 *
 * The placement must not change, ever, without a plan: during a rolling upgrade old and new
 * instances count on one cluster, and an instance that placed a client's counter on another
 * server than its peers would admit up to the whole limit again. ring.test.ts checks this
 * module against hashring itself and pins a few keys' servers.
 *
 * What hashring does, and so what this does:
 *
 * - Each server gets `floor((1 / n) * 40 * n)` "vnodes" (n servers, each of weight 1, 40
 *   vnodes by default). That is 40, except that the float product rounds to 39 for some n
 *   (7, 14, 28, 49, ...): it is kept, or such clusters would move keys.
 * - Vnode i of a server is md5(`${label}-${i}`); its 16 bytes give 4 points, each 4 bytes
 *   read little-endian as an unsigned 32-bit number (libketama's layout).
 * - The points are sorted by value; equal values keep their order of creation (server list
 *   order, then vnode, then point), as hashring's sort is stable.
 * - A key hashes to the first 4 bytes of md5(key, UTF-8), little-endian. Its server is the one
 *   of the first point at or above that value, wrapping past the highest to the lowest.
 *
 * hashring's other options (weights, vnode counts per server, a default port left out of the
 * hash, 3 points per digest, other hashes) are not used by memgate and not offered here.
 *
 * Like hashring, it remembers the last few thousand keys' places: a check looks its key up at
 * least once, and the key's md5 is nearly all of a lookup's cost. Measured when this replaced
 * hashring (3 servers, 2 busy cores): a lookup without the cache 4.5-8 µs, a remembered one
 * 25-75 ns (hashring's LRU hit: 30-110 ns).
 */

/** hashring's default 'vnode count'. */
const VNODES = 40;
/** Points taken from each vnode's 16-byte md5 digest: ketama's 4 (hash_ring's 3 is not used). */
const POINTS_PER_VNODE = 4;
/** Keys whose place is remembered: hashring's default 'max cache size'. */
const REMEMBERED = 5000;

function md5(text: string): Buffer {
  return createHash('md5').update(text, 'utf8').digest();
}

/** Where a key falls on the ring: the first 4 bytes of its md5, little-endian. */
export function ketamaHash(key: string): number {
  return md5(key).readUInt32LE(0);
}

export class HashRing {
  /** Every point's value, ascending. */
  private readonly values: Uint32Array;
  /** The server of each point, in the same order: the ring read clockwise. */
  readonly owners: readonly string[];
  /** Recent keys' positions on the ring (a Map, so any string is a plain key, `__proto__` too). */
  private readonly remembered = new Map<string, number>();

  /**
   * @param servers Labels (`host:port`), in configuration order. The order matters only
   *   where two points have the same value. A label listed twice gets its points twice, as in hashring.
   */
  constructor(servers: readonly string[]) {
    const n = servers.length;
    if (n === 0) throw new RangeError('a hash ring needs at least one server');
    // Written as hashring computes it (weight / total weight * vnodes * servers), so the float rounds alike.
    const vnodes = Math.floor((1 / n) * VNODES * n);
    const points: { value: number; server: string }[] = [];
    for (const server of servers) {
      for (let vnode = 0; vnode < vnodes; vnode++) {
        const digest = md5(`${server}-${vnode}`);
        for (let point = 0; point < POINTS_PER_VNODE; point++)
          points.push({ value: digest.readUInt32LE(point * 4), server });
      }
    }
    // Array.prototype.sort is stable: ties stay in creation order, as in hashring.
    points.sort((a, b) => a.value - b.value);
    this.values = Uint32Array.from(points, (point) => point.value);
    this.owners = points.map((point) => point.server);
  }

  /** The server that holds `key`. */
  get(key: string): string {
    return this.owners[this.positionOfKey(key)] as string;
  }

  /** The server of the first point at or above `hash` (a ketamaHash), wrapping around. */
  serverAt(hash: number): string {
    return this.owners[this.positionOf(hash)] as string;
  }

  /**
   * The first `count` distinct servers clockwise from `key`, its own server first: where its
   * keys go while the servers before them are out. Fewer if the ring has fewer. As hashring's
   * `range(key, count, true)`.
   */
  range(key: string, count: number): string[] {
    const { owners } = this;
    const start = this.positionOfKey(key);
    const found: string[] = [];
    for (let step = 0; step < owners.length && found.length < count; step++) {
      const server = owners[(start + step) % owners.length] as string;
      if (!found.includes(server)) found.push(server);
    }
    return found;
  }

  /** Where `key` falls: the position of its server's point. */
  private positionOfKey(key: string): number {
    let position = this.remembered.get(key);
    if (position !== undefined) return position;
    position = this.positionOf(ketamaHash(key));
    // Full: forget them all, simpler than hashring's LRU; a hot key is back at its next
    // lookup. (Dropping the oldest key of a Map instead measured slower than no cache at all.)
    if (this.remembered.size >= REMEMBERED) this.remembered.clear();
    this.remembered.set(key, position);
    return position;
  }

  /**
   * The index of the first point whose value is at least `hash`, or 0 past the last one.
   * (hashring's own search is written differently and returns the same index.)
   */
  private positionOf(hash: number): number {
    const { values } = this;
    let low = 0;
    let high = values.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((values[mid] as number) < hash) low = mid + 1;
      else high = mid;
    }
    return low === values.length ? 0 : low;
  }
}
