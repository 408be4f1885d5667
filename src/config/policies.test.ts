import { readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { planEvents } from '../counting/plan.js';
import { loadPolicyFile, parsePolicies, parsePolicyText, PolicyError, type PolicySet } from './policies.js';

function problemsOf(document: unknown): readonly string[] {
  try {
    parsePolicies(document, 'test.yaml');
  } catch (error) {
    expect(error).toBeInstanceOf(PolicyError);
    return (error as PolicyError).problems;
  }
  throw new Error('expected the policies to be refused');
}

describe('parsePolicies', () => {
  it('reads the example from the issue, filling defaults and names', () => {
    const policies = parsePolicies({
      events: {
        login: { limits: [{ limit: 5, window: '1m' }, { limit: 100, window: '1d' }] },
        url_shorten: { limits: [{ limit: 100, window: '60s', granularity: '1s' }] },
        export: { algorithm: 'fixed', limits: [{ limit: 10, window: '1h' }] },
      },
    });
    expect([...policies.events.keys()]).toEqual(['login', 'url_shorten', 'export']);
    expect(policies.events.get('login')).toEqual({
      event: 'login',
      algorithm: 'sliding',
      edge: 'whole',
      onStoreError: 'allow',
      limits: [
        { name: 'login-1m', limit: 5, window: 60, granularity: 1 },
        { name: 'login-1d', limit: 100, window: 86_400, granularity: 1 },
      ],
    });
    expect(policies.events.get('export')?.limits).toEqual([{ name: 'export-1h', limit: 10, window: 3600, granularity: 3600 }]);
  });

  it('reads what an event decides when the store cannot answer, and refuses anything but allow or deny', () => {
    expect(parsePolicies({ events: { a: { onStoreError: 'deny', limits: [{ limit: 1, window: 60 }] } } }).events.get('a')?.onStoreError).toBe('deny');
    expect(() => parsePolicies({ events: { a: { onStoreError: 'error', limits: [{ limit: 1, window: 60 }] } } }, 'p.yaml')).toThrow(/event "a", field onStoreError/);
  });

  it('reads the gateway section, longest route prefix first, and names what is wrong in it', () => {
    const events = { login: { limits: [{ limit: 1, window: 60 }] }, api: { limits: [{ limit: 1, window: 60 }] } };
    const gateway = parsePolicies({ events, gateway: { feature: 'header:X-Api-Key', routes: [{ prefix: '/a', event: 'api' }, { prefix: '/a/login', event: 'login' }] } }).gateway;
    expect(gateway).toEqual({
      feature: { from: 'header', header: 'x-api-key' },
      trustedProxies: 0,
      denyStatus: 429,
      routes: [{ prefix: '/a/login', event: 'login' }, { prefix: '/a', event: 'api' }],
    });
    expect(problemsOf({ events, gateway: { feature: 'cookie:x', routes: [{ prefix: '/x', event: 'nope' }] } })).toEqual([
      'gateway, field feature: must be client-ip or header:<name> (got "cookie:x")',
      'gateway, field routes[0].event: "nope" is not an event of this file',
    ]);
  });

  it('reads an edge rule for a sliding event', () => {
    expect(parsePolicies({ events: { a: { edge: 'weighted', limits: [{ limit: 1, window: 60, granularity: 60 }] } } }).events.get('a')?.edge).toBe('weighted');
  });

  it('keeps an explicit limit name', () => {
    const policies = parsePolicies({ events: { a: { limits: [{ name: 'burst', limit: 1, window: 10 }] } } });
    expect(policies.events.get('a')?.limits[0]?.name).toBe('burst');
  });

  it.each([
    ['an unknown top-level key', { events: { a: { limits: [{ limit: 1, window: 1 }] } }, extra: 1 }, 'top level: unknown key "extra"'],
    ['an unknown event key', { events: { a: { limit: 1, limits: [{ limit: 1, window: 1 }] } } }, 'event "a": unknown key "limit"'],
    ['an unknown limit key', { events: { a: { limits: [{ limit: 1, window: 1, windw: 2 }] } } }, 'event "a", field limits[0]: unknown key "windw"'],
    ['a missing window', { events: { a: { limits: [{ limit: 1 }] } } }, 'event "a", field limits[0]: missing required key "window"'],
    ['a missing limits list', { events: { a: {} } }, 'event "a": missing required key "limits"'],
    ['a zero limit', { events: { a: { limits: [{ limit: 0, window: 1 }] } } }, 'event "a", field limits[0].limit: must be >= 1 (got 0)'],
    ['a fractional limit', { events: { a: { limits: [{ limit: 2.5, window: 1 }] } } }, 'event "a", field limits[0].limit: must be integer (got 2.5)'],
    ['a negative window', { events: { a: { limits: [{ limit: 1, window: -60 }] } } }, 'event "a", field limits[0].window: must be a positive whole duration'],
    ['a zero window', { events: { a: { limits: [{ limit: 1, window: '0s' }] } } }, 'event "a", field limits[0].window: must be a positive whole duration'],
    ['a fractional window', { events: { a: { limits: [{ limit: 1, window: 1.5 }] } } }, 'event "a", field limits[0].window: must be a positive whole duration like 30s, 5m, 1h, 1d or a number of seconds (got 1.5)'],
    ['an unknown unit', { events: { a: { limits: [{ limit: 1, window: '1w' }] } } }, 'event "a", field limits[0].window: must be a positive whole duration'],
    ['a window that granularity does not divide', { events: { a: { limits: [{ limit: 1, window: '1m', granularity: '7s' }] } } }, 'event "a", field limits[0].window: 1m is not a multiple of the granularity 7s'],
    ['a granularity on a fixed window', { events: { a: { algorithm: 'fixed', limits: [{ limit: 1, window: '1m', granularity: '1s' }] } } }, 'event "a", field limits[0].granularity: applies to sliding windows only'],
    ['an unknown edge rule', { events: { a: { edge: 'half', limits: [{ limit: 1, window: 1 }] } } }, 'event "a", field edge: must be equal to one of the allowed values (got "half")'],
    ['an edge rule on a fixed window', { events: { a: { algorithm: 'fixed', edge: 'drop', limits: [{ limit: 1, window: 60 }] } } }, 'event "a", field edge: applies to sliding windows only'],
    ['an unknown algorithm', { events: { a: { algorithm: 'leaky', limits: [{ limit: 1, window: 1 }] } } }, 'event "a", field algorithm: must be equal to one of the allowed values (got "leaky")'],
    ['empty events', { events: {} }, 'field events: defines no events'],
    ['no events key', {}, 'top level: missing required key "events"'],
    ['an empty limits list', { events: { a: { limits: [] } } }, 'event "a", field limits: must NOT have fewer than 1 items'],
    ['a bad event name', { events: { 'log in': { limits: [{ limit: 1, window: 1 }] } } }, 'event "log in": event names are'],
    ['two limits with one name', { events: { a: { limits: [{ limit: 1, window: 60 }, { limit: 2, window: '1m', granularity: 10 }] } } }, 'event "a", field limits[1].name: "a-1m" is used by another limit'],
    ['a document that is not an object', 'events: yes', 'top level: must be object'],
  ])('refuses %s, naming the event and field', (_case, document, expected) => {
    const problems = problemsOf(document);
    expect(problems.some((p) => p.startsWith(expected)), `${problems.join('\n')}\nshould contain ${expected}`).toBe(true);
  });

  it('reports every problem at once', () => {
    const problems = problemsOf({ events: { a: { limits: [{ limit: 0, window: 1 }] }, b: { limits: [{ limit: 1, window: 'x' }] } } });
    expect(problems).toHaveLength(1); // shape errors stop before duration checks
    const both = problemsOf({ events: { a: { limits: [{ limit: 1, window: 'x' }] }, b: { limits: [{ limit: 1, window: 'y' }] } } });
    expect(both).toHaveLength(2);
  });
});

describe('loadPolicyFile', () => {
  async function fileWith(name: string, text: string): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'memgate-policies-'));
    const path = join(dir, name);
    await writeFile(path, text);
    return path;
  }

  it('reads YAML', async () => {
    const path = await fileWith('p.yaml', 'events:\n  login:\n    limits:\n      - { limit: 5, window: 1m }\n');
    const policies = await loadPolicyFile(path);
    expect(policies.source).toBe(path);
    expect(policies.events.get('login')?.limits[0]?.window).toBe(60);
  });

  it('reads JSON', async () => {
    const path = await fileWith('p.json', JSON.stringify({ events: { login: { limits: [{ limit: 5, window: 60 }] } } }));
    expect((await loadPolicyFile(path)).events.get('login')?.limits[0]?.limit).toBe(5);
  });

  it('names the file in every error', async () => {
    const path = await fileWith('bad.yaml', 'events:\n  login:\n    limits:\n      - { limit: 5, window: 1w }\n');
    await expect(loadPolicyFile(path)).rejects.toThrow(`invalid policies in ${path}:\n  - event "login", field limits[0].window`);
  });

  it('reports YAML syntax errors with their position', async () => {
    const path = await fileWith('broken.yaml', 'events:\n  login: [\n');
    await expect(loadPolicyFile(path)).rejects.toThrow(/not valid YAML: .*line/s);
  });

  it('refuses duplicate keys in YAML instead of keeping the last one', async () => {
    const path = await fileWith('dup.yaml', 'events:\n  a:\n    limits: [{ limit: 1, window: 1 }]\n  a:\n    limits: [{ limit: 2, window: 1 }]\n');
    await expect(loadPolicyFile(path)).rejects.toThrow(/not valid YAML/);
  });

  it('reports a missing file', async () => {
    await expect(loadPolicyFile('/nonexistent/policies.yaml')).rejects.toThrow(/cannot read the file/);
  });
});

describe('any file at all', () => {
  const example = readFileSync(fileURLToPath(new URL('../../config/policies.yaml', import.meta.url)), 'utf8');

  /** Parses and plans, as the service does at start; anything but a PolicyError is a bug. */
  function load(run: () => PolicySet): void {
    try {
      planEvents(run());
    } catch (error) {
      expect(error).toBeInstanceOf(PolicyError);
      expect((error as PolicyError).message.length).toBeGreaterThan(0);
    }
  }

  it('is planned or refused with a PolicyError, never anything else: any JSON value', () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.record({ events: fc.dictionary(fc.string(), fc.jsonValue()) })), (document) => {
        load(() => parsePolicies(document, 'fuzz.json'));
      }),
      { numRuns: 2000 },
    );
  });

  it('is planned or refused with a PolicyError, never anything else: the example file with random edits', () => {
    const edit = fc.record({ at: fc.nat(example.length), cut: fc.nat(8), insert: fc.string({ unit: 'binary', maxLength: 8 }) });
    fc.assert(
      fc.property(fc.array(edit, { minLength: 1, maxLength: 4 }), fc.boolean(), (edits, asJson) => {
        let text = asJson ? JSON.stringify(parseYaml(example)) : example;
        for (const { at, cut, insert } of edits) text = text.slice(0, at) + insert + text.slice(at + cut);
        load(() => parsePolicyText(text, asJson ? 'fuzz.json' : 'fuzz.yaml'));
      }),
      { numRuns: 2000 },
    );
  });
});
