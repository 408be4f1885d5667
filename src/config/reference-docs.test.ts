// The README's tables of error codes and settings, and docs/envoy.md's of envoyproxy/ratelimit's
// variables, are generated from the tables in src/config. When one is stale this fails with the difference; to write them again:
//   npx vitest run src/config/reference-docs.test.ts -u
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from './error-codes.js';
import { READ_BY_OTHER_TOOLS, REPLACED_SETTINGS, SETTINGS, type Setting } from './settings.js';
import { LINK_NAME } from './variable-names.js';
import { UPSTREAM_VARIABLES } from './upstream-env.js';

const README = new URL('../../README.md', import.meta.url);
const ENVOY_DOC = new URL('../../docs/envoy.md', import.meta.url);
const DOCS = new URL('../../docs/', import.meta.url);
const documents = () => [
  { name: 'README.md', text: readFileSync(README, 'utf8') },
  ...readdirSync(DOCS)
    .filter((name) => name.endsWith('.md'))
    .map((name) => ({ name: `docs/${name}`, text: readFileSync(new URL(name, DOCS), 'utf8') })),
];

/** `text` with the lines between the markers of section `name` replaced by `body`. */
function withSection(text: string, name: string, body: string): string {
  const begin = `<!-- generated: ${name} (src/config/reference-docs.test.ts) -->\n`;
  const end = `<!-- end: ${name} -->\n`;
  const from = text.indexOf(begin);
  const to = text.indexOf(end, from);
  if (from === -1 || to === -1) throw new Error(`no section ${JSON.stringify(begin.trim())} … ${JSON.stringify(end.trim())}`);
  return text.slice(0, from + begin.length) + body + text.slice(to);
}

function errorTable(): string {
  const rows = Object.entries(ERROR_CODES).map(([code, { status, when }]) => `| ${status} | \`${code}\` | ${when} |`);
  return ['| status | code | when |', '|---|---|---|', ...rows, ''].join('\n');
}

function settingsTable(): string {
  const rows = Object.values(SETTINGS).map((setting: Setting<unknown>) => {
    const names = setting.env.map((name) => `\`${name}\``).join(', ');
    const fallback = setting.default === 'unset' ? 'unset' : `\`${setting.default}\``;
    const meaning = setting.details === undefined ? setting.summary : `${setting.summary}. ${setting.details}`;
    return `| ${names} | ${fallback} | ${setting.values} | ${meaning} |`;
  });
  return ['| variable | default | values | meaning |', '|---|---|---|---|', ...rows, ''].join('\n');
}

describe('the README', () => {
  it('lists every setting from src/config/settings.ts', async () => {
    const readme = readFileSync(README, 'utf8');
    await expect(withSection(readme, 'settings', settingsTable())).toMatchFileSnapshot(README.pathname);
  });

  it('lists every error code from src/config/error-codes.ts', async () => {
    const readme = readFileSync(README, 'utf8');
    await expect(withSection(readme, 'error codes', errorTable())).toMatchFileSnapshot(README.pathname);
  });
});

function upstreamTable(): string {
  const rows = UPSTREAM_VARIABLES.map(({ names, handling, memgate }) => {
    return `| ${names.map((name) => `\`${name}\``).join(', ')} | ${handling} | ${memgate} |`;
  });
  return ['| upstream variable | memgate | what it does |', '|---|---|---|', ...rows, ''].join('\n');
}

describe('docs/envoy.md', () => {
  it("lists every envoyproxy/ratelimit variable from src/config/upstream-env.ts", async () => {
    const doc = readFileSync(ENVOY_DOC, 'utf8');
    await expect(withSection(doc, 'upstream environment', upstreamTable())).toMatchFileSnapshot(ENVOY_DOC.pathname);
  });
});

describe('README.md and docs/', () => {
  const settings = Object.values(SETTINGS) as Setting<unknown>[];
  // Read by other tools, not the service: `memgate usage` finds the memgate it asks with one.
  const scriptVariables = Object.keys(READ_BY_OTHER_TOOLS);
  const known = new Set([
    ...settings.flatMap((setting) => setting.env),
    ...Object.keys(REPLACED_SETTINGS),
    ...scriptVariables,
  ]);

  it('name only settings that exist', () => {
    expect(readFileSync('src/commands/usage.ts', 'utf8')).toContain('MEMGATE_URL');
    for (const { name, text } of documents()) {
      // Not settings, and said so: Kubernetes' service links, and a misspelt name quoted with memgate's refusal of it.
      const unknown = [...text.matchAll(/\b(?:MEMGATE|MEMCACHED)_[A-Z0-9_]+\b/g)]
        .map(([variable]) => variable)
        .filter((variable) => !known.has(variable) && !LINK_NAME.test(variable) && !text.includes(`${variable} is not a memgate setting`));
      expect(unknown, name).toEqual([]);
    }
  });

  it('give a setting’s default as the table does where they mention it, as in `NAME` (250 ms)', () => {
    const defaults = new Map(settings.map((setting) => [setting.env[0], setting]));
    let mentions = 0;
    for (const { name, text } of documents()) {
      for (const [mention, variable = '', amount = '', unit] of text.matchAll(/`([A-Z][A-Z0-9_]+)` \((?:default )?([0-9][0-9,]*)(?: (ms|s|MiB))?\b/g)) {
        const setting = defaults.get(variable);
        if (!setting) continue;
        mentions++;
        const stated = Number(amount.replaceAll(',', '')) * (unit === 's' && setting.values.endsWith(' ms') ? 1000 : 1);
        expect(stated, `${name}: ${mention}`).toBe(Number(setting.default));
      }
    }
    expect(mentions).toBeGreaterThan(3);
  });
});
