import { describe, expect, it } from 'vitest';
import type { SeriesAnswer } from '../usage/usage-history.js';
import {
  fold,
  formatTime,
  headerLine,
  LABEL_WIDTH,
  renderSpark,
  renderTable,
  renderTop,
  sparkline,
  sparkWidth,
  timeAxis,
} from './usage-render.js';

/** 2026-11-23T10:00:00Z */
const T0 = 1_795_428_000;

/** The event's curve: allowed, denied, degraded and, optionally, shadow_denied, settled and settled_cost a point. */
function answer(
  counts: readonly (readonly [number, number, number, number?, number?, number?])[],
  step = 60,
): SeriesAnswer {
  return {
    event: 'login',
    feature: null,
    from: T0 + 1,
    until: T0 + counts.length * step,
    step,
    points: counts.map(([allowed, denied, degraded, shadowDenied = 0, settled = 0, settledCost = 0], i) => ({
      t: T0 + i * step,
      allowed,
      denied,
      degraded,
      shadow_denied: shadowDenied,
      settled,
      settled_cost: settledCost,
    })),
  };
}

/** A client's curve: allowed, denied, and whether allowed is known, a point a minute. */
function clientAnswer(points: readonly [number, number, boolean][]): SeriesAnswer {
  return {
    ...answer(points.map(([allowed, denied]) => [allowed, denied, 0])),
    feature: '203.0.113.7',
    points: points.map(([allowed, denied, known], i) => ({
      t: T0 + i * 60,
      allowed,
      denied,
      degraded: 0,
      shadow_denied: 0,
      settled: 0,
      settled_cost: 0,
      tracked: { allowed: known, denied: true },
    })),
  };
}

describe('sparkline', () => {
  it('scales from zero to the highest value: blank for none, ▁ for the least count, █ for the most', () => {
    expect(sparkline([0, 1, 4, 8, 16, 100])).toBe(' ▁▁▁▂█');
    expect(sparkline([0, 1, 2, 3, 4, 5, 6, 7, 8])).toBe(' ▁▂▃▄▅▆▇█');
  });

  it('is blank where nothing was decided, and one character per value', () => {
    expect(sparkline([0, 0, 0])).toBe('   ');
    expect(sparkline([])).toBe('');
    expect(sparkline(Array.from({ length: 500 }, (_, i) => i))).toHaveLength(500);
  });
});

describe('fold', () => {
  const points = answer(Array.from({ length: 10 }, (_, i) => [i, 1, 0])).points;

  it('leaves points that fit alone', () => {
    expect(fold(points, 10)).toEqual({ points, per: 1 });
  });

  it('sums neighbours into columns, each starting where its first point starts; the last may hold fewer', () => {
    const { points: folded, per } = fold(points, 4);
    expect(per).toBe(3);
    expect(folded.map(({ t, allowed, denied }) => [t - T0, allowed, denied])).toEqual([
      [0, 0 + 1 + 2, 3],
      [180, 3 + 4 + 5, 3],
      [360, 6 + 7 + 8, 3],
      [540, 9, 1],
    ]);
  });
});

describe('formatTime', () => {
  it('shows seconds only for steps under a minute, the date only for spans over a day, the year over a year', () => {
    expect(formatTime(T0 + 5, { step: 5, span: 600 })).toBe('10:00:05');
    expect(formatTime(T0, { step: 60, span: 3600 })).toBe('10:00');
    expect(formatTime(T0, { step: 3600, span: 30 * 86_400 })).toBe('11-23 10:00');
    expect(formatTime(T0, { step: 3600, span: 2 * 365 * 86_400 })).toBe('2026-11-23 10:00');
    expect(formatTime(T0, { step: 86_400, span: 365 * 86_400 })).toBe('2026-11-23');
  });
});

describe('timeAxis', () => {
  const label = (t: number) => String(t);

  it('puts the first time at the left, the last ending at the right and the middle one centred', () => {
    const times = Array.from({ length: 21 }, (_, i) => 100 + i);
    expect(timeAxis(times, label)).toBe('100      110      120');
  });

  it('leaves out what does not fit with two blanks around it', () => {
    expect(timeAxis([100, 101, 102, 103, 104, 105, 106, 107], label)).toBe('100  107');
    expect(timeAxis([100, 101, 102], label)).toBe('100');
    expect(timeAxis([], label)).toBe('');
  });
});

describe('sparkWidth', () => {
  it('is what a terminal leaves beside the label and the min and max', () => {
    expect(sparkWidth(80)).toBe(44);
    expect(sparkWidth(20)).toBe(10);
    expect(sparkWidth(1_000_000)).toBe(10_000);
  });
});

describe('headerLine', () => {
  it('says the event, the range in UTC, the points and the totals of each outcome', () => {
    expect(
      headerLine(
        answer([
          [1000, 3, 0],
          [234, 0, 2],
        ]),
      ),
    ).toBe('login: 2026-11-23 10:00:01 to 10:02:00 UTC, 2 points of 1min; allowed 1,234, denied 3, degraded 2');
  });

  it('names the client, and both dates when the range crosses midnight', () => {
    const line = headerLine({ ...answer([[1, 0, 0]], 86_400), feature: '203.0.113.7' });
    expect(line).toBe(
      'login, client 203.0.113.7: 2026-11-23 10:00:01 to 2026-11-24 10:00:00 UTC, 1 points of 1d; allowed 1, denied 0, degraded 0',
    );
  });
});

describe('renderSpark', () => {
  it('prints the header, a row per outcome with its min and max, and the time axis under the columns', () => {
    const lines = renderSpark(
      answer([
        [0, 0, 0],
        [4, 1, 0],
        [8, 0, 0],
        [2, 3, 0],
      ]),
      80,
    ).split('\n');
    expect(lines).toEqual([
      'login: 2026-11-23 10:00:01 to 10:04:00 UTC, 4 points of 1min; allowed 14, denied 4, degraded 0',
      'allowed    ▄█▂  min 0  max 8',
      'denied     ▃ █  min 0  max 3',
      'degraded        min 0  max 0',
      `${' '.repeat(LABEL_WIDTH)}10:00`,
    ]);
  });

  it('folds a step finer than the terminal into columns, and says so', () => {
    const points = Array.from({ length: 100 }, (): [number, number, number] => [1, 0, 0]);
    const lines = renderSpark(answer(points, 1), 40).split('\n');
    // 40 columns leave 10 for the sparkline: 10 points a column.
    expect(lines[0]).toContain('100 points of 1s; allowed 100, denied 0, degraded 0 (10 points a column');
    expect(lines[1]).toBe('allowed   ██████████  min 10  max 10');
  });
});

describe("a client's steps below the heaviest", () => {
  const points: [number, number, boolean][] = [
    [0, 0, false],
    [4, 1, true],
    [0, 0, true],
    [0, 2, false],
  ];

  it('are marked in the sparkline, unlike a known 0, with a legend', () => {
    const lines = renderSpark(clientAnswer(points), 80).split('\n');
    expect(lines.slice(1, 3)).toEqual(['allowed   ·█ ·  min 0  max 4', 'denied     ▄ █  min 0  max 2']);
    expect(lines.at(-1)).toBe(`${' '.repeat(LABEL_WIDTH)}· not tracked: below the heaviest clients of that step`);
    expect(renderSpark(clientAnswer([[1, 0, true]]), 80)).not.toContain('not tracked');
  });

  it('read "not tracked" in the table, not 0', () => {
    const rows = renderTable(clientAnswer(points)).split('\n');
    expect(rows[4]).toBe('| 2026-11-23 10:00:00 | not tracked |      0 |        0 |');
    expect(rows[6]).toBe('| 2026-11-23 10:02:00 |           0 |      0 |        0 |');
  });

  it('read as a lower bound in the table where only part of the step is known', () => {
    const rows = renderTable(clientAnswer([[3, 0, false]])).split('\n');
    expect(rows[4]).toBe('| 2026-11-23 10:00:00 |     ≥ 3 |      0 |        0 |');
  });

  it('make a folded column known only if every point of it is', () => {
    const { points: folded } = fold(clientAnswer(points).points, 2);
    expect(folded.map((point) => [point.allowed, point.tracked])).toEqual([
      [4, { allowed: false, denied: true }],
      [0, { allowed: false, denied: true }],
    ]);
    const { points: known } = fold(
      clientAnswer([
        [1, 0, true],
        [0, 0, true],
      ]).points,
      1,
    );
    expect(known[0]?.tracked).toEqual({ allowed: true, denied: true });
  });
});

describe('renderTable', () => {
  it('prints a row per point and the totals', () => {
    const text = renderTable(
      answer([
        [5, 2, 0],
        [3, 1, 1],
      ]),
    );
    expect(text.split('\n')).toEqual([
      'login: 2026-11-23 10:00:01 to 10:02:00 UTC, 2 points of 1min; allowed 8, denied 3, degraded 1',
      '',
      '| time (UTC)          | allowed | denied | degraded |',
      '| :------------------ | ------: | -----: | -------: |',
      '| 2026-11-23 10:00:00 |       5 |      2 |        0 |',
      '| 2026-11-23 10:01:00 |       3 |      1 |        1 |',
      '| total               |       8 |      3 |        1 |',
    ]);
  });
});

describe('allowed decisions a shadow limit would have denied', () => {
  const shadow = answer([
    [0, 0, 0, 0],
    [4, 1, 0, 3],
    [8, 0, 0, 0],
    [2, 3, 0, 1],
  ]);

  it('show in the totals as a part of allowed, and not at all when there are none', () => {
    expect(headerLine(shadow)).toBe(
      'login: 2026-11-23 10:00:01 to 10:04:00 UTC, 4 points of 1min; allowed 14 (4 shadow_denied), denied 4, degraded 0',
    );
    expect(headerLine(answer([[3, 1, 0, 0]]))).toMatch(/; allowed 3, denied 1, degraded 0$/);
  });

  it('get a sparkline row and a line saying what it counts, only when there are some', () => {
    const lines = renderSpark(shadow, 80).split('\n');
    expect(lines.slice(1, 5)).toEqual([
      'allowed    ▄█▂  min 0  max 8',
      'denied     ▃ █  min 0  max 3',
      'degraded        min 0  max 0',
      'shadow     █ ▃  min 0  max 3',
    ]);
    expect(lines.at(-1)).toBe(
      `${' '.repeat(LABEL_WIDTH)}shadow: allowed, but a limit in shadow mode would have denied them (part of allowed)`,
    );
    expect(renderSpark(answer([[3, 1, 0, 0]]), 80)).not.toContain('shadow');
  });

  it('get a column in the table, only when there are some', () => {
    expect(renderTable(shadow).split('\n').slice(2)).toEqual([
      '| time (UTC)          | allowed | denied | degraded | shadow_denied |',
      '| :------------------ | ------: | -----: | -------: | ------------: |',
      '| 2026-11-23 10:00:00 |       0 |      0 |        0 |             0 |',
      '| 2026-11-23 10:01:00 |       4 |      1 |        0 |             3 |',
      '| 2026-11-23 10:02:00 |       8 |      0 |        0 |             0 |',
      '| 2026-11-23 10:03:00 |       2 |      3 |        0 |             1 |',
      '| total               |      14 |      4 |        0 |             4 |',
    ]);
    expect(renderTable(answer([[3, 1, 0, 0]]))).not.toContain('shadow');
  });

  it('are summed when folded into columns', () => {
    const { points } = fold(shadow.points, 2);
    expect(points.map((point) => [point.allowed, point.shadow_denied])).toEqual([
      [4, 3],
      [10, 1],
    ]);
  });
});

describe('reservations settled, and their actual costs', () => {
  // An LLM gateway's tokens: reserved 4,096 a check, settled at what each answer cost.
  const settled = answer([
    [2, 0, 0, 0, 0, 0],
    [3, 1, 0, 0, 2, 2900],
    [0, 0, 0, 0, 1, 0],
    [1, 0, 0, 0, 3, 12_400],
  ]);

  it('show in the totals after the decisions, and not at all when none was settled', () => {
    expect(headerLine(settled)).toBe(
      'login: 2026-11-23 10:00:01 to 10:04:00 UTC, 4 points of 1min; allowed 6, denied 1, degraded 0; settled 6, settled_cost 15,300',
    );
    expect(headerLine(answer([[3, 1, 0]]))).toMatch(/; allowed 3, denied 1, degraded 0$/);
    // Settled at a cost of 0 (the request failed before any token): settled all the same.
    expect(headerLine(answer([[0, 0, 0, 0, 1, 0]]))).toMatch(/degraded 0; settled 1, settled_cost 0$/);
  });

  it('get a sparkline row of the cost, scaled to itself, and a line saying its unit, only when some were settled', () => {
    const lines = renderSpark(settled, 80).split('\n');
    expect(lines.slice(1, 5)).toEqual([
      'allowed   ▆█ ▃  min 0  max 3',
      'denied     █    min 0  max 1',
      'degraded        min 0  max 0',
      'cost       ▂ █  min 0  max 12,400',
    ]);
    expect(lines.at(-1)).toBe(
      `${' '.repeat(LABEL_WIDTH)}cost: the actual cost of the reservations settled, in the limits' units (not decisions)`,
    );
    expect(renderSpark(answer([[3, 1, 0]]), 80)).not.toContain('cost');
  });

  it('get a settled and a settled_cost column in the table, only when some were settled', () => {
    expect(renderTable(settled).split('\n').slice(2)).toEqual([
      '| time (UTC)          | allowed | denied | degraded | settled | settled_cost |',
      '| :------------------ | ------: | -----: | -------: | ------: | -----------: |',
      '| 2026-11-23 10:00:00 |       2 |      0 |        0 |       0 |            0 |',
      '| 2026-11-23 10:01:00 |       3 |      1 |        0 |       2 |         2900 |',
      '| 2026-11-23 10:02:00 |       0 |      0 |        0 |       1 |            0 |',
      '| 2026-11-23 10:03:00 |       1 |      0 |        0 |       3 |        12400 |',
      '| total               |       6 |      1 |        0 |       6 |        15300 |',
    ]);
    expect(renderTable(answer([[3, 1, 0]]))).not.toContain('settled');
  });

  it('come after the shadow row and column when an event has both', () => {
    const both = answer([
      [4, 0, 0, 1, 0, 0],
      [2, 0, 0, 0, 1, 900],
    ]);
    expect(headerLine(both)).toMatch(
      /; allowed 6 \(1 shadow_denied\), denied 0, degraded 0; settled 1, settled_cost 900$/,
    );
    const lines = renderSpark(both, 80).split('\n');
    expect(lines.slice(4, 6).map((line) => line.slice(0, LABEL_WIDTH).trim())).toEqual(['shadow', 'cost']);
    expect(lines.slice(-2).map((line) => line.trim().split(':')[0])).toEqual(['shadow', 'cost']);
    expect(renderTable(both).split('\n')[2]).toBe(
      '| time (UTC)          | allowed | denied | degraded | shadow_denied | settled | settled_cost |',
    );
  });

  it('are summed when folded into columns', () => {
    const { points } = fold(settled.points, 2);
    expect(points.map((point) => [point.settled, point.settled_cost])).toEqual([
      [2, 2900],
      [4, 12_400],
    ]);
  });

  it('read as none from a memgate that answers no settles (an older one)', () => {
    const older = answer([[3, 1, 0]]);
    // As JSON from before settles were kept: points without the two fields.
    const points = JSON.parse(
      JSON.stringify(older.points, ['t', 'allowed', 'denied', 'degraded']),
    ) as typeof older.points;
    expect(Object.keys(points[0] ?? {})).toEqual(['t', 'allowed', 'denied', 'degraded']);
    const text = renderTable({ ...older, points });
    expect(text).not.toContain('settled');
    expect(text.split('\n').at(-1)).toBe('| total               |       3 |      1 |        0 |');
  });
});

describe('renderTop', () => {
  it('lists allowed and denied clients side by side, most first', () => {
    const text = renderTop({
      event: 'login',
      from: T0,
      until: T0 + 3600,
      allowed: [
        { feature: '203.0.113.7', count: 5 },
        { feature: '198.51.100.23', count: 2 },
      ],
      denied: [{ feature: '203.0.113.7', count: 2 }],
    });
    expect(text.split('\n')).toEqual([
      'heaviest clients of login, 2026-11-23 10:00:00 to 2026-11-23 11:00:00 UTC',
      '',
      '|  # | allowed       | count | denied      | count |',
      '| -: | :------------ | ----: | :---------- | ----: |',
      '|  1 | 203.0.113.7   |     5 | 203.0.113.7 |     2 |',
      '|  2 | 198.51.100.23 |     2 |             |       |',
    ]);
  });

  it('says when the range had no client', () => {
    expect(renderTop({ event: 'login', from: T0, until: T0 + 60, allowed: [], denied: [] })).toBe(
      'heaviest clients of login, 2026-11-23 10:00:00 to 2026-11-23 10:01:00 UTC: none',
    );
  });
});
