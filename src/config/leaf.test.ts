// src/config is what every layer reads its settings, policies, defaults and error codes
// from: it must import none of them (counting, http, store), or the layers would depend on
// each other through it. Below it only src/shared, the client's share of memgate (its
// defaults, decision types, RateLimit headers, feature names), which imports nothing of
// memgate: so the client can be packaged without the service.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const here = new URL('./', import.meta.url);

/** Every module's import and export specifiers, by module name. */
function specifiersOf(folder: URL): Map<string, string[]> {
  const modules = readdirSync(folder).filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'));
  return new Map(
    modules.map((name) => {
      const text = readFileSync(new URL(name, folder), 'utf8');
      return [name, [...text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+'([^']+)'/gm)].map(([, specifier]) => specifier ?? '')];
    }),
  );
}

describe('src/config', () => {
  it('imports nothing of memgate outside itself but src/shared', () => {
    const modules = specifiersOf(here);
    expect([...modules.keys()]).toContain('settings.ts');
    for (const [name, specifiers] of modules)
      expect(specifiers.filter((specifier) => specifier.startsWith('..') && !specifier.startsWith('../shared/')), name).toEqual([]);
    // The pattern does find imports (./defaults.js, node:net, ajv, ...).
    expect([...modules.values()].flat().length).toBeGreaterThan(10);
  });
});

describe('src/shared', () => {
  it('imports nothing of memgate outside itself', () => {
    const modules = specifiersOf(new URL('../shared/', here));
    expect([...modules.keys()]).toContain('defaults.ts');
    for (const [name, specifiers] of modules) expect(specifiers.filter((specifier) => specifier.startsWith('..')), name).toEqual([]);
  });
});
