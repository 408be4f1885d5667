import { describe, expect, it } from 'vitest';
import { Placement } from './placement.js';
import { parseServerList } from './servers.js';

const keys = Array.from({ length: 20_000 }, (_, i) => `mg:{login:=user-${i}}:1:1790000000`);

/** The server label each key routes to. */
function placement(servers: string): string[] {
  const labels = parseServerList(servers).map((endpoint) => endpoint.label);
  const ring = new Placement({ servers: labels });
  return keys.map((key) => labels[ring.serverOf(key)] ?? '');
}

describe('Placement of keys on a ring', () => {
  const four = 'a:11211,b:11211,c:11211,d:11211';
  const five = `${four},e:11211`;

  it('moves about 1/N of the features when a node joins, all of them to the new node', () => {
    const before = placement(four);
    const after = placement(five);
    const moved = before.filter((server, i) => server !== after[i]);
    expect(moved.length / keys.length).toBeGreaterThan(0.12);
    expect(moved.length / keys.length).toBeLessThan(0.28);
    expect(new Set(after.filter((server, i) => server !== before[i]))).toEqual(new Set(['e:11211']));
  });

  it('moves only the features of a node that leaves', () => {
    const before = placement(five);
    const after = placement(four);
    before.forEach((server, i) => {
      if (server !== 'e:11211') expect(after[i]).toBe(server);
    });
  });

  it('spreads features over every node', () => {
    const counts = new Map<string, number>();
    for (const server of placement(five)) counts.set(server, (counts.get(server) ?? 0) + 1);
    expect(counts.size).toBe(5);
    for (const count of counts.values()) expect(count / keys.length).toBeGreaterThan(0.1);
  });
});
