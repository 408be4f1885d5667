import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Placement, type PlacementChange, type PlacementOptions } from './placement.js';

const SERVERS = ['a:11211', 'b:11211', 'c:11211'];
const keys = Array.from({ length: 6000 }, (_, i) => `mg:{login:=user-${i}}:1:1790000000`);

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

function placement(options: Partial<PlacementOptions> = {}) {
  const changes: PlacementChange[] = [];
  const made = new Placement({
    servers: SERVERS,
    failover: true,
    holdDownMs: 30_000,
    settleMs: 10_000,
    flapWindowMs: 300_000,
    maxHoldDownMs: 600_000,
    onChange: (change) => changes.push(change),
    clock: Date.now,
    ...options,
  });
  return { placement: made, changes, servers: () => keys.map((key) => SERVERS[made.serverOf(key)]) };
}

describe('Placement', () => {
  it("moves only a down server's keys, each to the next server on the ring, and lists where they went", () => {
    const { placement: ring, servers, changes } = placement();
    const before = servers();
    expect(new Set(before)).toEqual(new Set(SERVERS));
    ring.down(1, 'read ECONNRESET');
    const after = servers();
    // Every key checked, asserted once (an expect per key was most of the test's time).
    const wrong = before.flatMap((server, i) => {
      const moved = after[i] !== server;
      const home = SERVERS[ring.homeOf(keys[i] as string)];
      return moved !== (server === 'b:11211') || home !== server ? [{ key: keys[i], server, now: after[i], home }] : [];
    });
    expect(wrong).toEqual([]);
    const targets = new Set(after.filter((_, i) => before[i] === 'b:11211'));
    expect(changes).toEqual([
      { kind: 'left', server: 'b:11211', reason: 'read ECONNRESET', to: [...targets].sort(), holdDownMs: 30_000 },
    ]);
    expect(ring.placeOf(1)).toEqual({ state: 'failed-over', to: [...targets].sort() });
    expect(ring.anyAway).toBe(true);
  });

  it.each([2, 5, 7, 8, 14])('moves no client of a server that stays up, with %i servers', (count) => {
    const servers = Array.from({ length: count }, (_, i) => `10.0.0.${i + 1}:11211`);
    const { placement: ring } = placement({ servers });
    const before = keys.map((key) => ring.serverOf(key));
    ring.down(count - 1, 'gone');
    if (count > 2) ring.down(1, 'gone too');
    const gone = new Set([count - 1, ...(count > 2 ? [1] : [])]);
    const wrong = keys.flatMap((key, i) => {
      const now = ring.serverOf(key);
      const was = before[i] as number;
      return gone.has(now) || (!gone.has(was) && now !== was) ? [{ key, was, now }] : [];
    });
    expect(wrong).toEqual([]);
  });

  it('returns once the server has answered for the settle time, and no sooner than the hold-down', () => {
    const { placement: ring, servers, changes } = placement();
    const home = servers();
    ring.down(1, 'gone');
    vi.advanceTimersByTime(25_000);
    ring.up(1); // answers 25 s after leaving: the hold-down (30 s) ends before the settle (35 s)
    expect(changes.at(-1)).toEqual({ kind: 'answering', server: 'b:11211', returnsInMs: 10_000 });
    expect(ring.placeOf(1)).toMatchObject({ state: 'failed-over', returnsInMs: 10_000 });
    vi.advanceTimersByTime(9_999);
    expect(ring.isPlaced(1)).toBe(false);
    vi.advanceTimersByTime(1);
    expect(ring.isPlaced(1)).toBe(true);
    expect(changes.at(-1)).toEqual({ kind: 'returned', server: 'b:11211', awayMs: 35_000 });
    expect(servers()).toEqual(home);
    expect(ring.anyAway).toBe(false);

    // Back at once after leaving: the hold-down decides.
    vi.advanceTimersByTime(400_000);
    ring.down(1, 'gone');
    vi.advanceTimersByTime(100);
    ring.up(1);
    expect(ring.placeOf(1)).toMatchObject({ returnsInMs: 29_900 });
    vi.advanceTimersByTime(29_900);
    expect(ring.isPlaced(1)).toBe(true);
  });

  it('a server that stops answering while settling starts its settle again', () => {
    const { placement: ring } = placement({ holdDownMs: 0 });
    ring.down(0, 'gone');
    ring.up(0);
    vi.advanceTimersByTime(9_000);
    ring.down(0, 'gone again');
    vi.advanceTimersByTime(5_000);
    expect(ring.isPlaced(0)).toBe(false);
    ring.up(0);
    vi.advanceTimersByTime(9_999);
    expect(ring.isPlaced(0)).toBe(false);
    vi.advanceTimersByTime(1);
    expect(ring.isPlaced(0)).toBe(true);
  });

  it('doubles the hold-down of a server that fails again soon after its return, up to the most', () => {
    const { placement: ring, changes } = placement({ settleMs: 0, maxHoldDownMs: 100_000 });
    const holdDowns: number[] = [];
    for (let flap = 0; flap < 5; flap++) {
      ring.down(2, 'flap');
      ring.up(2);
      const left = changes.findLast((change) => change.kind === 'left');
      holdDowns.push(left?.kind === 'left' ? left.holdDownMs : -1);
      vi.advanceTimersByTime(100_000);
      expect(ring.isPlaced(2)).toBe(true);
    }
    expect(holdDowns).toEqual([30_000, 60_000, 100_000, 100_000, 100_000]);
    // Five quiet minutes after its return, the next failure starts from the setting again.
    vi.advanceTimersByTime(300_000);
    ring.down(2, 'once');
    expect(changes.at(-1)).toMatchObject({ kind: 'left', holdDownMs: 30_000 });
  });

  it('keeps a server in placement while no other answers, and takes back one that answers at once', () => {
    const { placement: ring, servers } = placement();
    ring.down(0, 'gone');
    ring.down(1, 'gone'); // c answers and is placed: b leaves for it
    expect(ring.isPlaced(1)).toBe(false);
    ring.down(2, 'gone'); // nobody answers: every server is placed again, down
    ring.up(2); // c comes back first: a and b, still down, leave for it
    expect(ring.placeOf(0)).toMatchObject({ state: 'failed-over', to: ['c:11211'] });
    vi.advanceTimersByTime(10_000);
    ring.up(0); // a answers after the settle time: it settles
    expect(ring.isPlaced(0)).toBe(false);
    ring.down(2, 'gone'); // the last placed one, while a (out) answers
    expect(ring.isPlaced(0)).toBe(true); // no placed server answers: a is back without settling
    expect(ring.placeOf(2)).toEqual({ state: 'failed-over', to: ['a:11211'] });
    expect(new Set(servers())).toEqual(new Set(['a:11211']));
  });

  it('places every server again when none answers, whatever order they died in, and forgets their hold-downs', () => {
    const orders = [
      [0, 1, 2],
      [2, 1, 0],
      [1, 2, 0],
    ];
    const views = orders.map((order) => {
      const { placement: ring, servers, changes } = placement();
      // a flap first, on one of them only: its doubled hold-down must not outlive the outage
      if (order[0] === 1) {
        ring.down(1, 'flap');
        ring.up(1);
        vi.advanceTimersByTime(40_000);
        ring.down(1, 'flap');
        ring.up(1);
      }
      for (const index of order) {
        ring.down(index, 'killed');
        vi.advanceTimersByTime(300);
      }
      expect([0, 1, 2].map((index) => ring.placeOf(index))).toEqual([
        { state: 'down' },
        { state: 'down' },
        { state: 'down' },
      ]);
      expect(changes.filter((change) => change.kind === 'returned' && change.whileDown)).not.toEqual([]);
      return { ring, servers };
    });
    vi.advanceTimersByTime(60_000);
    // A staggered return, seen alike by all three: a first, b 2 s later (within the settle: together), c 12 s later.
    const states = () => views.map(({ ring }) => [0, 1, 2].map((index) => ring.placeOf(index).state).join(','));
    for (const { ring } of views) ring.up(0);
    expect(new Set(states())).toEqual(new Set(['up,failed-over,failed-over']));
    vi.advanceTimersByTime(2_000);
    for (const { ring } of views) ring.up(1);
    expect(new Set(states())).toEqual(new Set(['up,up,failed-over']));
    vi.advanceTimersByTime(10_000);
    for (const { ring } of views) ring.up(2);
    // c came after the window: it settles, and no sooner than the hold-down from the outage's end
    for (const { ring } of views) expect(ring.placeOf(2)).toMatchObject({ state: 'failed-over', returnsInMs: 18_000 });
    vi.advanceTimersByTime(18_000);
    expect(new Set(states())).toEqual(new Set(['up,up,up']));
    expect(new Set(views.map(({ servers }) => servers().join()))).toHaveProperty('size', 1);
  });

  it('places two servers that come back together alike, whichever answered first', () => {
    const first = placement();
    const second = placement();
    for (const { placement: ring } of [first, second]) for (const index of [0, 1, 2]) ring.down(index, 'killed');
    first.placement.up(0);
    first.placement.up(1);
    second.placement.up(1);
    second.placement.up(0);
    for (const { placement: ring } of [first, second])
      expect([0, 1, 2].map((index) => ring.placeOf(index).state)).toEqual(['up', 'up', 'failed-over']);
    // Back once more within the window after leaving again: settles as any other return.
    first.placement.down(1, 'flap');
    first.placement.up(1);
    expect(first.placement.placeOf(1)).toMatchObject({ state: 'failed-over' });
  });

  it('moves nothing while no other server has been heard from lately, until one answers a question', () => {
    const heard = [0, 0, 0];
    const asked: (readonly number[])[] = [];
    const { placement: ring, changes } = placement({
      heardAt: (index) => heard[index] ?? 0,
      freshMs: 125,
      onUnsure: (servers) => asked.push(servers),
    });
    vi.advanceTimersByTime(10_000);
    // This instance lost its network: a hears nothing, and nothing from b or c either.
    ring.down(0, 'did not answer within 250 ms');
    expect(ring.isPlaced(0)).toBe(true);
    expect(ring.placeOf(0)).toEqual({ state: 'down' });
    expect(asked).toEqual([[1, 2]]);
    expect(changes).toEqual([]);
    // c answers the question: a leaves.
    heard[2] = Date.now();
    ring.recheck();
    expect(ring.placeOf(0)).toMatchObject({ state: 'failed-over' });
    expect(changes.map((change) => change.kind)).toEqual(['left']);
  });

  it('tells of a server that stops again while it settles, and never of settling when it returns at once', () => {
    const { placement: ring, changes } = placement();
    ring.down(1, 'gone');
    ring.up(1);
    ring.down(1, 'gone again');
    expect(changes.map((change) => change.kind)).toEqual(['left', 'answering', 'unsettled']);
    changes.length = 0;
    ring.up(1);
    ring.down(0, 'gone');
    ring.down(2, 'gone'); // the last placed one: it stays
    ring.up(1); // the only one answering comes back at once, and the others leave for it
    expect(changes.map((change) => change.kind)).toEqual(['answering', 'left', 'returned', 'left']);
  });

  it('knows for a while which keys moved at the last change, so that a take-back never reaches a server that did not count', () => {
    const { placement: ring, servers } = placement();
    const home = servers();
    const onB = keys.filter((_, i) => home[i] === 'b:11211');
    const elsewhere = keys.filter((_, i) => home[i] !== 'b:11211');
    expect(onB.some((key) => ring.movedWithin(key, 500))).toBe(false);
    ring.down(1, 'gone');
    expect(onB.every((key) => ring.movedWithin(key, 500))).toBe(true);
    expect(elsewhere.some((key) => ring.movedWithin(key, 500))).toBe(false);
    vi.advanceTimersByTime(500);
    expect(onB.some((key) => ring.movedWithin(key, 500))).toBe(false);
    ring.up(1);
    vi.advanceTimersByTime(29_500); // it returns, 30 s after it left: they move back
    expect(onB.every((key) => ring.movedWithin(key, 500))).toBe(true);
    expect(elsewhere.some((key) => ring.movedWithin(key, 500))).toBe(false);
  });

  it('never moves a key with failover off, or with one server', () => {
    const off = placement({ failover: false });
    const home = off.servers();
    off.placement.down(1, 'gone');
    expect(off.servers()).toEqual(home);
    expect(off.placement.placeOf(1)).toEqual({ state: 'down' });
    expect(off.changes).toEqual([]);

    const one = placement({ servers: ['a:11211'] });
    one.placement.down(0, 'gone');
    expect(one.placement.serverOf('any')).toBe(0);
    expect(one.placement.placeOf(0)).toEqual({ state: 'down' });
  });
});
