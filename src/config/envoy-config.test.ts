import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ENVOY_UNIT_SECONDS, loadEnvoyConfig, parseEnvoyTexts, type EnvoyConfig } from './envoy-config.js';
import { envoyLimitEvents } from './envoy-events.js';
import {
  applyReplaces,
  envoyEventName,
  matchEnvoyDescriptor,
  overrideStatKey,
  upstreamStatKey,
  wildcardMatches,
  type EnvoyEntry,
} from './envoy-match.js';
import { NAME_PATTERN } from './policy-schema.js';
import { PolicyError } from './policies.js';

const fixtures = fileURLToPath(new URL('../../test/fixtures/envoy/', import.meta.url));

function configOf(text: string): EnvoyConfig {
  return parseEnvoyTexts([['rl.yaml', text]], 'rl.yaml');
}

function problemsOf(files: Record<string, string>): readonly string[] {
  try {
    parseEnvoyTexts(Object.entries(files), 'config');
  } catch (error) {
    expect(error).toBeInstanceOf(PolicyError);
    return (error as PolicyError).problems;
  }
  throw new Error('expected the configuration to be refused');
}

const entries = (...pairs: [string, string][]): EnvoyEntry[] => pairs.map(([key, value]) => ({ key, value }));

// Shaped after envoyproxy/ratelimit's test/config/basic_config.yaml cases (our own values).
const NESTED = `
domain: shop
descriptors:
  - key: tenant
    value: acme
    descriptors:
      - key: route
        rate_limit: { unit: second, requests_per_unit: 5 }
      - key: route
        value: checkout
        rate_limit: { unit: second, requests_per_unit: 10 }
  - key: client
    rate_limit: { unit: minute, requests_per_unit: 20 }
  - key: client
    value: partner
    rate_limit: { unit: minute, requests_per_unit: 30 }
  - key: client
    value: monitor
  - key: plan
    value: gold
    rate_limit: { unit: day, requests_per_unit: 15 }
    descriptors:
      - key: region
        value: eu
        rate_limit: { unit: day, requests_per_unit: 25 }
  - key: batch
    rate_limit: { unlimited: true }
  - key: probe
    shadow_mode: true
    rate_limit: { unit: hour, requests_per_unit: 1, name: probe-limit }
`;

describe('parseEnvoyTexts', () => {
  it('reads nested descriptors, units of any case, unlimited, shadow_mode and names, with fixed windows of the unit by default', () => {
    const config = configOf(NESTED.replace('unit: day, requests_per_unit: 15', 'unit: DAY, requests_per_unit: 15'));
    const shop = config.domains.get('shop');
    expect([...(shop?.descriptors.byKey.keys() ?? [])]).toEqual(['tenant_acme', 'client', 'client_partner', 'client_monitor', 'plan_gold', 'batch', 'probe']);
    const gold = shop?.descriptors.byKey.get('plan_gold');
    expect(gold?.rateLimit).toEqual({ replaces: [], unlimited: false, unit: 'day', requestsPerUnit: 15, window: 86_400, algorithm: 'fixed', granularity: 86_400, onStoreError: 'allow' });
    expect(gold?.children.byKey.get('region_eu')?.path).toEqual(['plan_gold', 'region_eu']);
    expect(shop?.descriptors.byKey.get('batch')?.rateLimit?.unlimited).toBe(true);
    expect(shop?.descriptors.byKey.get('probe')).toMatchObject({ shadowMode: true, rateLimit: { name: 'probe-limit' } });
    expect(shop?.descriptors.byKey.get('client_monitor')?.rateLimit).toBeUndefined();
  });

  it('takes month as 30 days and year as 365, as envoyproxy/ratelimit does', () => {
    expect(ENVOY_UNIT_SECONDS.month).toBe(2_592_000);
    const config = configOf('domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: year, requests_per_unit: 1 }\n');
    expect(config.domains.get('d')?.descriptors.byKey.get('a')?.rateLimit?.window).toBe(31_536_000);
  });

  it('keeps a month 30 days from the epoch unless the rate_limit opts into calendar periods', () => {
    const config = configOf(`domain: d
descriptors:
  - key: plain
    rate_limit: { unit: month, requests_per_unit: 100 }
  - key: billed
    rate_limit: { unit: month, requests_per_unit: 100, calendar: { timezone: Europe/Berlin, anchor: 15 } }
  - key: daily
    rate_limit: { unit: day, requests_per_unit: 10, calendar: { timezone: UTC } }
`);
    const level = config.domains.get('d')?.descriptors.byKey;
    expect(level?.get('plain')?.rateLimit).toMatchObject({ window: 2_592_000 });
    expect(level?.get('plain')?.rateLimit?.calendar).toBeUndefined();
    expect(level?.get('billed')?.rateLimit).toMatchObject({
      unit: 'month',
      window: 31 * 86_400,
      calendar: { unit: 'month', anchor: 15, timeZone: 'Europe/Berlin' },
    });
    // A UTC day is the epoch-aligned day already.
    expect(level?.get('daily')?.rateLimit?.calendar).toBeUndefined();
  });

  it('refuses calendar periods where they cannot apply, saying why', () => {
    expect(
      problemsOf({
        'a.yaml': `domain: d
descriptors:
  - key: a
    rate_limit: { unit: minute, requests_per_unit: 1, calendar: { timezone: Europe/Berlin } }
  - key: b
    rate_limit: { unit: month, requests_per_unit: 1, calendar: { timezone: Atlantis/Capital } }
  - key: c
    rate_limit: { unit: week, requests_per_unit: 1, algorithm: sliding, calendar: {} }
`,
      }),
    ).toEqual([
      'a.yaml: domain "d", descriptor a (descriptors[0]), field rate_limit.calendar: applies to unit day, week or month (got unit minute)',
      'a.yaml: domain "d", descriptor b (descriptors[1]), field rate_limit.calendar.timezone: must be an IANA time zone such as Europe/Berlin, America/New_York or UTC (got "Atlantis/Capital")',
      'a.yaml: domain "d", descriptor c (descriptors[2]), field rate_limit.calendar: counts fixed windows: drop algorithm: sliding',
    ]);
  });

  it("reads memgate's opt-in fields: window, algorithm, granularity, onStoreError", () => {
    const config = configOf(`domain: d
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 5, window: 90s, algorithm: sliding, granularity: 10s, onStoreError: deny }
  - key: ip
    rate_limit: { window: 2h, requests_per_unit: 7, algorithm: sliding }
`);
    const level = config.domains.get('d')?.descriptors.byKey;
    expect(level?.get('user')?.rateLimit).toMatchObject({ unit: 'minute', window: 90, algorithm: 'sliding', granularity: 10, onStoreError: 'deny' });
    expect(level?.get('ip')?.rateLimit).toMatchObject({ window: 7200, algorithm: 'sliding', granularity: 1 });
    expect(level?.get('ip')?.rateLimit?.unit).toBeUndefined();
  });

  it('reads reservations (a memgate extension) into the limit and its event, with a life that fits the window', () => {
    const config = configOf(`domain: llm
descriptors:
  - key: tenant
    rate_limit: { unit: day, requests_per_unit: 100000, reservations: { life: 5m } }
  - key: model
    rate_limit: { unit: hour, requests_per_unit: 5000, reservations: {} }
  - key: burst
    rate_limit: { window: 2m, requests_per_unit: 50, algorithm: sliding, granularity: 10s, reservations: {} }
  - key: plain
    rate_limit: { unit: day, requests_per_unit: 10 }
`);
    const level = config.domains.get('llm')?.descriptors.byKey;
    expect(level?.get('tenant')?.rateLimit?.reservations).toEqual({ life: 300 });
    // Without a life: 5 minutes, or what fits the window with the 2 s grace to settle late.
    expect(level?.get('model')?.rateLimit?.reservations).toEqual({ life: 300 });
    expect(level?.get('burst')?.rateLimit?.reservations).toEqual({ life: 117 });
    expect(level?.get('plain')?.rateLimit?.reservations).toBeUndefined();
    const events = new Map(envoyLimitEvents(config).map(({ policy }) => [policy.event, policy]));
    expect(events.get('envoy:llm.tenant')?.reservations).toEqual({ life: 300 });
    expect(events.get('envoy:llm.burst')?.reservations).toEqual({ life: 117 });
    expect(events.get('envoy:llm.plain')).not.toHaveProperty('reservations');
  });

  it('refuses reservations that cannot fit, on an unlimited descriptor, and memgate_reservation as a key', () => {
    expect(
      problemsOf({
        'r.yaml': `domain: llm
descriptors:
  - key: a
    rate_limit: { unit: minute, requests_per_unit: 10, reservations: { life: 5m } }
  - key: b
    rate_limit: { unit: day, requests_per_unit: 10, reservations: { life: 2h } }
  - key: c
    rate_limit: { window: 3s, requests_per_unit: 10, reservations: {} }
  - key: d
    rate_limit: { unlimited: true, reservations: {} }
  - key: e
    rate_limit: { unit: day, requests_per_unit: 10, reservations: { life: soon } }
  - key: f
    rate_limit: { unit: day, requests_per_unit: 10, reservations: { units: 5 } }
  - key: tenant
    descriptors:
      - key: memgate_reservation
        rate_limit: { unit: day, requests_per_unit: 10 }
`,
      }),
    ).toEqual([
      'r.yaml: domain "llm", descriptor a (descriptors[0]), field rate_limit.reservations.life: a reservation of 5m (plus 2 s to settle it late) must end within the window, 1m',
      'r.yaml: domain "llm", descriptor b (descriptors[1]), field rate_limit.reservations.life: 2h is longer than the 1h a reservation may live',
      'r.yaml: domain "llm", descriptor c (descriptors[2]), field rate_limit.reservations: no reservation fits the window, 3s: a reservation and the 2 s to settle it late must end within it',
      'r.yaml: domain "llm", descriptor d (descriptors[3]), field rate_limit.reservations: must not be set when unlimited is true: an unlimited descriptor counts nothing',
      'r.yaml: domain "llm", descriptor e (descriptors[4]), field rate_limit.reservations.life: must be a positive whole duration like 30s, 5m, 1h, 1d or a number of seconds (got "soon")',
      'r.yaml: domain "llm", descriptor f (descriptors[5]), field rate_limit.reservations.units: unknown key "units"',
      'r.yaml: domain "llm", descriptor tenant.memgate_reservation (descriptors[6].descriptors[0]), field key: "memgate_reservation" names the reservation a call settles (see docs/envoy.md); no descriptor can have it as its key',
    ]);
  });

  it('keeps keys and values YAML would read as numbers or booleans as they are written', () => {
    const config = configOf('domain: 2024\ndescriptors:\n  - key: status\n    value: 0404\n    rate_limit: { unit: second, requests_per_unit: 1 }\n  - key: on\n    value: yes\n');
    expect([...(config.domains.get('2024')?.descriptors.byKey.keys() ?? [])]).toEqual(['status_0404', 'on_yes']);
  });

  it('reports every fault at once, each with its file, domain and descriptor', () => {
    const problems = problemsOf({
      'a.yaml': `domain: d
descriptors:
  - key: k1
    rate_limit: { unit: fortnight, requests_per_unit: 1 }
  - value: v
  - key: k2
    descriptors:
      - key: sub
        rate_limit: { unit: second, requests_per_unit: -1, burst: 3 }
      - key: sub
  - key: k3
    rate_limit: { unlimited: true, unit: day }
  - key: k4
    rate_limit: { unit: minute }
  - key: k5
    rate_limit: { name: self, unit: minute, requests_per_unit: 1, replaces: [{ name: self }, { name: "" }] }
  - key: k6
    value: exact
    share_threshold: true
  - key: k7
    rate_limit: { unit: minute, requests_per_unit: 1, granularity: 10s }
  - key: k8
    rate_limit: { requests_per_unit: 1, window: 90s, algorithm: sliding, granularity: 60s }
`,
      'b.yaml': 'domain: ""\ndescriptors:\n  - a\n',
    });
    expect(problems).toEqual([
      'a.yaml: domain "d", descriptor k1 (descriptors[0]), field rate_limit.unit: must be one of second, minute, hour, day, week, month, year (got "fortnight")',
      'a.yaml: domain "d", descriptor ?_v (descriptors[1]), field key: missing',
      'a.yaml: domain "d", descriptor k2.sub (descriptors[2].descriptors[0]), field rate_limit.requests_per_unit: must be >= 0 (got -1)',
      'a.yaml: domain "d", descriptor k2.sub (descriptors[2].descriptors[0]), field rate_limit.burst: unknown key "burst"',
      'a.yaml: domain "d", descriptor k2.sub (descriptors[2].descriptors[1]): duplicate: same key and value as item 0 of this list; give each one limit',
      'a.yaml: domain "d", descriptor k3 (descriptors[3]), field rate_limit.unit: must not be set when unlimited is true: an unlimited descriptor counts nothing',
      'a.yaml: domain "d", descriptor k4 (descriptors[4]), field rate_limit.requests_per_unit: missing: give the number of requests per unit (0 denies every request)',
      'a.yaml: domain "d", descriptor k5 (descriptors[5]), field rate_limit.replaces[0]: "self" is this limit\'s own name; a limit cannot replace itself',
      'a.yaml: domain "d", descriptor k5 (descriptors[5]), field rate_limit.replaces[1]: must name the limit it replaces (a name)',
      'a.yaml: domain "d", descriptor k6_exact (descriptors[6]), field share_threshold: applies to wildcard values (containing "*") only; "k6_exact" has none',
      'a.yaml: domain "d", descriptor k7 (descriptors[7]), field rate_limit.granularity: applies to sliding windows only (algorithm: sliding); a fixed window is one counter',
      'a.yaml: domain "d", descriptor k8 (descriptors[8]), field rate_limit.window: 90s is not a multiple of the granularity 1m',
      'b.yaml: field domain: must not be empty: every file names its domain',
      'b.yaml: descriptor ? (descriptors[0]): must be object (got "a")',
    ]);
  });

  it('refuses keys envoyproxy/ratelimit does not know, misspellings included, and a file without a domain', () => {
    expect(problemsOf({ 'm.yaml': 'domains: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: day, requestsperunit: 5 }\n' })).toEqual([
      'm.yaml: field domains: unknown key "domains"',
      'm.yaml: descriptor a (descriptors[0]), field rate_limit.requestsperunit: unknown key "requestsperunit"',
      'm.yaml: descriptor a (descriptors[0]), field rate_limit.requests_per_unit: missing: give the number of requests per unit (0 denies every request)',
      'm.yaml: field domain: missing',
    ]);
  });

  it('takes a domain without descriptors, and a descriptor without a limit or children (envoyproxy/ratelimit lets it through)', () => {
    const config = parseEnvoyTexts(
      [
        ['empty.yaml', 'domain: quiet\n'],
        ['allow.yaml', 'domain: open\ndescriptors:\n  - key: path\n    value: /healthz\n'],
      ],
      'dir',
    );
    expect(config.domains.get('quiet')?.descriptors.byKey.size).toBe(0);
    expect(matchEnvoyDescriptor(config, 'open', entries(['path', '/healthz']))).toEqual({ kind: 'none', reason: 'no-limit' });
  });

  it('refuses a key given twice in one mapping, and text that is not YAML', () => {
    const [duplicate] = problemsOf({ 'dup.yaml': 'domain: d\ndescriptors:\n  - key: a\n    key: b\n' });
    expect(duplicate).toMatch(/^dup\.yaml: not valid YAML: Map keys must be unique/);
    expect(problemsOf({ 'bad.yaml': 'domain: [d\n' })[0]).toMatch(/^bad\.yaml: not valid YAML: /);
  });

  it('refuses a domain defined in two files, naming both', async () => {
    await expect(loadEnvoyConfig(`${fixtures}clash`)).rejects.toThrow(/clash\/b\.yaml: domain "shared" is already defined in .*clash\/a\.yaml/);
  });

  it('merges a domain defined in two files when asked, as MERGE_DOMAIN_CONFIG does, still refusing a descriptor both define', async () => {
    const merged = await loadEnvoyConfig(`${fixtures}clash`, { mergeDomains: true });
    expect([...merged.domains.keys()]).toEqual(['shared']);
    expect(matchEnvoyDescriptor(merged, 'shared', entries(['k', 'x']))).toMatchObject({ event: 'envoy:shared.k' });
    expect(matchEnvoyDescriptor(merged, 'shared', entries(['other', 'x']))).toMatchObject({ event: 'envoy:shared.other' });
    const twice = 'domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 1 }\n';
    expect(() => parseEnvoyTexts([['one.yaml', twice], ['two.yaml', twice]], 'config', { mergeDomains: true })).toThrow(
      /two\.yaml: domain "d": descriptor "a" is already defined in one\.yaml/,
    );
  });

  it('reads every .yaml and .yml file of a directory, leaving out dot files and other files', async () => {
    const config = await loadEnvoyConfig(`${fixtures}dir`);
    expect([...config.domains.keys()]).toEqual(['edge-api', 'login']);
    expect(config.domains.get('login')?.source).toMatch(/login\.yml$/);
    expect(matchEnvoyDescriptor(config, 'edge-api', entries(['remote_address', '192.0.2.7']))).toMatchObject({ event: 'envoy:edge-api.remote_address', feature: '192.0.2.7' });
    expect(matchEnvoyDescriptor(config, 'edge-api', entries(['path', '/healthz']))).toEqual({ kind: 'none', reason: 'no-limit' });
    expect(matchEnvoyDescriptor(config, 'login', entries(['user', 'ann']))).toMatchObject({ rateLimit: { window: 90, algorithm: 'sliding', onStoreError: 'deny' } });
    await expect(loadEnvoyConfig(`${fixtures}missing`)).rejects.toThrow(/cannot read/);
  });
});

describe('matchEnvoyDescriptor', () => {
  const config = configOf(NESTED);
  const match = (...pairs: [string, string][]) => matchEnvoyDescriptor(config, 'shop', entries(...pairs));
  const limitOf = (...pairs: [string, string][]) => {
    const found = match(...pairs);
    return found.kind === 'limit' ? found.rateLimit.requestsPerUnit : found.kind;
  };

  it('prefers an exact value to the key alone, at every level', () => {
    expect(limitOf(['client', 'partner'])).toBe(30);
    expect(limitOf(['client', 'someone'])).toBe(20);
    expect(limitOf(['tenant', 'acme'], ['route', 'checkout'])).toBe(10);
    expect(limitOf(['tenant', 'acme'], ['route', 'search'])).toBe(5);
  });

  it('applies the limit of the descriptor the last entry reaches, and nothing when the request is deeper or stops early', () => {
    expect(limitOf(['plan', 'gold'])).toBe(15);
    expect(limitOf(['plan', 'gold'], ['region', 'eu'])).toBe(25);
    expect(limitOf(['plan', 'gold'], ['region', 'us'])).toBe('none');
    // tenant_acme has no limit of its own; client has no children to go deeper into.
    expect(limitOf(['tenant', 'acme'])).toBe('none');
    expect(limitOf(['client', 'x'], ['route', 'checkout'])).toBe('none');
    expect(limitOf(['tenant', 'other'], ['route', 'checkout'])).toBe('none');
    expect(matchEnvoyDescriptor(config, 'shop', [])).toEqual({ kind: 'none', reason: 'no-limit' });
  });

  it('matches nothing for a listed value without a limit, an unknown key or an unknown domain', () => {
    expect(limitOf(['client', 'monitor'])).toBe('none');
    expect(limitOf(['nobody', 'x'])).toBe('none');
    expect(matchEnvoyDescriptor(config, 'elsewhere', entries(['client', 'a']))).toEqual({ kind: 'none', reason: 'unknown-domain' });
  });

  it('reports unlimited descriptors, and shadow mode', () => {
    expect(match(['batch', 'nightly']).kind).toBe('unlimited');
    expect(match(['probe', 'a'])).toMatchObject({ kind: 'limit', shadowMode: true });
    expect(match(['client', 'a'])).toMatchObject({ kind: 'limit', shadowMode: false });
  });

  it('names one event per matched descriptor and counts each free value apart', () => {
    const a = match(['client', '10.0.0.1']);
    const b = match(['client', '10.0.0.2']);
    const partner = match(['client', 'partner']);
    expect(a).toMatchObject({ event: 'envoy:shop.client', feature: '10.0.0.1' });
    expect(b).toMatchObject({ event: 'envoy:shop.client', feature: '10.0.0.2' });
    expect(partner).toMatchObject({ event: 'envoy:shop.client_partner', feature: '-' });
    expect(match(['tenant', 'acme'], ['route', 'search'])).toMatchObject({ event: 'envoy:shop.tenant_acme.route', feature: 'search' });
    expect(match(['tenant', 'acme'], ['route', 'checkout'])).toMatchObject({ event: 'envoy:shop.tenant_acme.route_checkout', feature: '-' });
    // Forms that could be mistaken for "no free value" or several are written as a JSON array.
    expect(match(['client', '-'])).toMatchObject({ feature: '["-"]' });
    expect(match(['client', '["a","b"]'])).toMatchObject({ feature: '["[\\"a\\",\\"b\\"]"]' });
  });

  describe('wildcards', () => {
    const wild = configOf(`domain: files
descriptors:
  - key: path
    value: /files/*
    rate_limit: { unit: minute, requests_per_unit: 20 }
  - key: path
    value: /files/big*
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: path
    value: /files/report.pdf
    rate_limit: { unit: minute, requests_per_unit: 50 }
  - key: path
    rate_limit: { unit: minute, requests_per_unit: 100 }
  - key: shared
    value: img-*
    share_threshold: true
    rate_limit: { unit: second, requests_per_unit: 3 }
  - key: api
    value: v*/users/*/posts
    rate_limit: { unit: second, requests_per_unit: 4 }
  - key: tenant
    value: t1
    descriptors:
      - key: path
        value: /a/*
        rate_limit: { unit: second, requests_per_unit: 6 }
`);
    const m = (...pairs: [string, string][]) => matchEnvoyDescriptor(wild, 'files', entries(...pairs));

    it('prefers an exact value, then the first wildcard of the file that matches, then the key alone', () => {
      expect(m(['path', '/files/report.pdf'])).toMatchObject({ rateLimit: { requestsPerUnit: 50 }, feature: '-' });
      // /files/* comes first in the file, so it wins over the longer /files/big*.
      expect(m(['path', '/files/bigfile'])).toMatchObject({ rateLimit: { requestsPerUnit: 20 } });
      const bigfile = m(['path', '/files/bigfile']);
      expect(bigfile.kind === 'limit' ? bigfile.event.slice('envoy:'.length) : '').toMatch(new RegExp(NAME_PATTERN));
      expect(m(['path', '/files/'])).toMatchObject({ rateLimit: { requestsPerUnit: 20 } });
      expect(m(['path', '/other'])).toMatchObject({ rateLimit: { requestsPerUnit: 100 }, event: 'envoy:files.path', feature: '/other' });
      expect(m(['tenant', 't1'], ['path', '/a/b'])).toMatchObject({ rateLimit: { requestsPerUnit: 6 } });
      expect(m(['tenant', 't1'], ['path', '/b'])).toEqual({ kind: 'none', reason: 'no-limit' });
    });

    it('counts each value of a wildcard apart, unless the descriptor shares its threshold', () => {
      expect(m(['path', '/files/a'])).toMatchObject({ feature: '/files/a' });
      expect(m(['path', '/files/b'])).toMatchObject({ feature: '/files/b' });
      expect(m(['shared', 'img-1'])).toMatchObject({ feature: '-' });
      expect(m(['shared', 'img-2'])).toMatchObject({ feature: '-' });
    });

    it('matches a * in the middle of a value as any run of characters', () => {
      expect(m(['api', 'v2/users/42/posts'])).toMatchObject({ rateLimit: { requestsPerUnit: 4 } });
      expect(m(['api', 'v2/users/42/comments'])).toEqual({ kind: 'none', reason: 'no-limit' });
      expect(wildcardMatches(['a', 'b', 'c'], 'abc')).toBe(true);
      expect(wildcardMatches(['ab', 'bc'], 'abc')).toBe(false);
      expect(wildcardMatches(['a', ''], 'a')).toBe(true);
    });
  });
});

describe('applyReplaces', () => {
  // After envoyproxy/ratelimit's README "Replaces": one endpoint's own limit replaces its category's.
  const config = configOf(`domain: api
descriptors:
  - key: category
    value: read
    rate_limit: { name: reads, unit: minute, requests_per_unit: 10 }
  - key: endpoint
    value: /search
    rate_limit: { unit: minute, requests_per_unit: 50, replaces: [{ name: reads }] }
  - key: endpoint
    value: /bulk
    rate_limit: { unlimited: true, replaces: [{ name: reads }] }
`);
  const matchAll = (...descriptors: [string, string][]) => applyReplaces(descriptors.map((pair) => matchEnvoyDescriptor(config, 'api', entries(pair))));

  it('drops a limit named in the replaces of another limit of the same request, and only then', () => {
    expect(matchAll(['category', 'read'], ['endpoint', '/search']).map((match) => match.kind)).toEqual(['none', 'limit']);
    expect(matchAll(['category', 'read'], ['endpoint', '/search'])[0]).toEqual({ kind: 'none', reason: 'replaced' });
    expect(matchAll(['category', 'read'], ['endpoint', '/bulk']).map((match) => match.kind)).toEqual(['none', 'unlimited']);
    expect(matchAll(['category', 'read'], ['endpoint', '/other']).map((match) => match.kind)).toEqual(['limit', 'none']);
  });
});

describe('envoyEventName', () => {
  it('keeps readable names and hashes the others into the event name pattern, never two alike', () => {
    expect(envoyEventName('shop', ['client_partner'])).toBe('envoy:shop.client_partner');
    const names = [
      envoyEventName('files', ['path_/files/*']),
      envoyEventName('files', ['path_/files/?']),
      envoyEventName('a.b', ['c']),
      envoyEventName('a', ['b.c']),
      envoyEventName('d', ['x'.repeat(80)]),
      envoyEventName('d', ['x'.repeat(81)]),
    ];
    // The prefix keeps them apart from memgate's own names; the rest fits the event name pattern.
    for (const name of names) {
      expect(name).not.toMatch(new RegExp(NAME_PATTERN));
      expect(name.slice('envoy:'.length)).toMatch(new RegExp(NAME_PATTERN));
    }
    expect(new Set(names).size).toBe(names.length);
  });
});

// The cases upstream's tests leave out (its GetLimit's code decides them); theirs are in test/conformance/upstream-config.test.ts.
describe('upstreamStatKey', () => {
  const config = configOf(`domain: d
descriptors:
  - key: k
    detailed_metric: true
    rate_limit: { unit: minute, requests_per_unit: 1 }
  - key: files
    value: files/*
    share_threshold: true
    descriptors:
      - key: user
        detailed_metric: true
        rate_limit: { unit: minute, requests_per_unit: 1 }
  - key: plain
    descriptors:
      - key: leaf
        value: v
  - key: a
    value: b*
    rate_limit: { unit: minute, requests_per_unit: 1 }
`);
  it('names an empty value key_ under detailed_metric, but the key alone beside a shared pattern', () => {
    expect(upstreamStatKey(config, 'd', entries(['k', '']))).toBe('d.k_');
    expect(upstreamStatKey(config, 'd', entries(['files', 'files/a'], ['user', '']))).toBe('d.files_files/*.user');
    expect(upstreamStatKey(config, 'd', entries(['files', 'files/a'], ['user', 'u1']))).toBe('d.files_files/*.user_u1');
  });

  it('is undefined where no limit matches, and names an override by its entries', () => {
    expect(upstreamStatKey(config, 'd', entries(['plain', 'x'], ['leaf', 'v']))).toBeUndefined();
    expect(upstreamStatKey(config, 'other', entries(['k', 'x']))).toBeUndefined();
    expect(overrideStatKey('d', entries(['plain', 'x'], ['leaf', '']))).toBe('d.plain_x.leaf');
  });

  it("trims the key from a wildcard's composite key only where the key starts it, as Go's TrimPrefix", () => {
    expect(upstreamStatKey(config, 'd', entries(['a', 'bcd']))).toBe('d.a_b*');
    // Key a_b, value x: "a_b_x" matches the pattern a_b*, whose composite key does not start with
    // "a_b_": upstream writes the key, then the whole composite key.
    expect(upstreamStatKey(config, 'd', entries(['a_b', 'x']))).toBe('d.a_b_a_b*');
  });
});
