import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EnvoyConfig, parseEnvoyTexts, readEnvoyFiles } from './envoy-config.js';
import { parseOffThread } from './parse-off-thread.js';
import { parsePolicyText, PolicyError, PolicySet } from './policies.js';

const text = (path: string) => readFileSync(path, 'utf8');

/** Everything a value holds, maps as entries; a function by its text (a rebuilt matcher is another closure). */
const spelled = (value: unknown) =>
  JSON.stringify(value, (_key, inner: unknown) =>
    inner instanceof Map ? [...inner] : typeof inner === 'function' ? inner.toString() : inner,
  );

/** 10,000 overrides of one event, each of a limit of its own. */
function manyOverrides(count: number): string {
  const lines = ['events:', '  api:', '    limits: [{ limit: 100, window: 1m }]', '    overrides:'];
  for (let i = 0; i < count; i++) lines.push(`      - { match: { feature: "user-${i}" }, limits: [{ limit: ${i + 1}, window: 1m }] }`);
  return `${lines.join('\n')}\n`;
}

describe('parseOffThread', () => {
  it('answers what parsing in this thread answers, as the same classes', async () => {
    const envoyFiles = await readEnvoyFiles('examples/envoy/ratelimit-config.yaml');
    for (const path of ['config/policies.yaml', 'docs/api-policies.yaml']) {
      const parsed = await parseOffThread({
        policies: { text: text(path), source: path },
        envoy: { files: envoyFiles, source: 'examples/envoy/ratelimit-config.yaml' },
      });
      expect(parsed.policies).toBeInstanceOf(PolicySet);
      expect(parsed.envoy).toBeInstanceOf(EnvoyConfig);
      expect(spelled(parsed.policies)).toBe(spelled(parsePolicyText(text(path), path)));
      expect(parsed.envoy).toEqual(parseEnvoyTexts(envoyFiles, 'examples/envoy/ratelimit-config.yaml'));
    }
  });

  it('refuses an invalid file with every problem the parser finds', async () => {
    const broken = 'events:\n  api:\n    limits: [{ limit: 0, window: 1x }]\n';
    const here = (() => {
      try {
        parsePolicyText(broken, 'broken.yaml');
      } catch (error) {
        return error as PolicyError;
      }
    })();
    expect(here?.problems.length).toBeGreaterThan(0);
    await expect(parseOffThread({ policies: { text: broken, source: 'broken.yaml' } })).rejects.toEqual(here);
  });

  it('refuses a file that takes more memory or time than the thread may, and is not hurt by it', async () => {
    const large = manyOverrides(10_000);
    await expect(
      parseOffThread({ policies: { text: large, source: 'large.yaml' } }, { heapMb: 16, deadlineMs: 60_000 }),
    ).rejects.toThrow(/parsing took more than the 16 MiB it may; not used/);
    await expect(
      parseOffThread({ policies: { text: large, source: 'large.yaml' } }, { heapMb: 512, deadlineMs: 50 }),
    ).rejects.toThrow(/not parsed within 50 ms; not used/);
    const parsed = await parseOffThread({ policies: { text: large, source: 'large.yaml' } });
    expect(parsed.policies.events.get('api')?.overrides).toHaveLength(10_000);
  }, 60_000);
});
