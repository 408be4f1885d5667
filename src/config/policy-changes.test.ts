import { describe, expect, it } from 'vitest';
import { parsePolicyText } from './policies.js';
import { describeChanges, policyChanges } from './policy-changes.js';

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
