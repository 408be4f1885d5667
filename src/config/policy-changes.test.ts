import { describe, expect, it } from 'vitest';
import { parsePolicyText } from './policies.js';
import { describeChanges, policyChangeSteps, policyChanges } from './policy-changes.js';

const file = (text: string) => parsePolicyText(text, 'policies.yaml');
const BEFORE = file(`events:
  login:
    limits:
      - { limit: 5, window: 1m }
      - { limit: 100, window: 1d }
  search:
    limits:
      - { limit: 10, window: 1s }
`);

describe('what a reload changed', () => {
  it('names events added and removed, and each limit and setting changed, added or removed', () => {
    const after = file(`events:
  login:
    onStoreError: deny
    limits:
      - { limit: 10, window: 1m }
      - { limit: 100, window: 1h }
  export:
    limits:
      - { limit: 2, window: 1m }
`);
    expect(policyChanges(BEFORE, after)).toEqual({
      added: ['export'],
      removed: ['search'],
      changed: [
        'login: limit login-1m 5/60s by 1s → 10/60s by 1s; limit login-1h added (100/3600s by 1s); limit login-1d removed; onStoreError allow → deny',
      ],
      gateway: false,
    });
    expect(describeChanges(policyChanges(BEFORE, after))).toBe(
      'events added: export | events removed: search | login: limit login-1m 5/60s by 1s → 10/60s by 1s; limit login-1h added (100/3600s by 1s); limit login-1d removed; onStoreError allow → deny',
    );
  });

  it('says so when nothing changed, whatever the order of the events', () => {
    const same = file(`events:
  search:
    limits:
      - { limit: 10, window: 1s }
  login:
    limits:
      - { limit: 5, window: 1m }
      - { limit: 100, window: 1d }
`);
    expect(describeChanges(policyChanges(BEFORE, same))).toBe('no change');
  });
});

describe('what a reload changed for clients', () => {
  it('names overrides, tiers and list entries added, removed and changed', () => {
    const before = file(`events:
  api:
    limits: [{ limit: 5, window: 1m }]
    tiers:
      pro: { limits: [{ limit: 50, window: 1m }] }
    overrides:
      - { match: { feature: acme }, limits: [{ limit: 10, window: 1m }] }
      - { match: { cidr: 10.0.0.0/8 }, tier: pro }
    deny: [{ prefix: bot- }]
`);
    const after = file(`events:
  api:
    limits: [{ limit: 5, window: 1m }]
    tiers:
      pro: { limits: [{ limit: 80, window: 1m }] }
    overrides:
      - { match: { feature: acme }, limits: [{ limit: 20, window: 1m }], until: "2026-12-31T00:00:00Z" }
      - { match: { prefix: tenant- }, tier: pro }
    allow: [{ feature: monitor }]
`);
    expect(policyChanges(before, after).changed).toEqual([
      'api: tier pro 50/60s by 1s → 80/60s by 1s; override feature "acme" 10/60s by 1s → 20/60s by 1s until 2026-12-31T00:00:00.000Z; override prefix "tenant-" added (tier pro); override cidr 10.0.0.0/8 removed; allow feature "monitor" added; deny prefix "bot-" removed',
    ]);
  });

  it('names ten changes of a kind and counts the rest: a reload of thousands of overrides is one short line', () => {
    // Enough for ten steps of the comparison; the most a file may hold (10,000 an event) took 4 s to parse twice here.
    const count = 2_560;
    const overrides = (offset: number) =>
      Array.from({ length: count }, (_, i) => `      - { match: { feature: u${i} }, limits: [{ limit: ${i + offset}, window: 1m }] }`).join('\n');
    const at = (offset: number) => file(`events:\n  api:\n    limits: [{ limit: 5, window: 1m }]\n    overrides:\n${overrides(offset)}\n`);
    const [before, after] = [at(1), at(2)];
    const [line] = policyChanges(before, after).changed;
    expect(line?.split('; ')).toHaveLength(11);
    // Compared a few hundred overrides a step (a reload runs the steps in slices, between checks).
    const steps = policyChangeSteps(before, after);
    let taken = 0;
    let step = steps.next();
    for (; !step.done; step = steps.next()) taken++;
    expect(taken).toBeGreaterThanOrEqual(count / 256);
    expect(step.value.changed).toEqual([line]);
    expect(line).toMatch(/^api: override feature "u0" 1\/60s by 1s → 2\/60s by 1s; .*; 2550 more override changes$/);
    expect(line?.length).toBeLessThan(1000);
  });
});
