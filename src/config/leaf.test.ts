// src/config is the leaf every layer reads its settings, policies, defaults and error
// codes from: it must import none of them (counting, http, store), or the layers would
// depend on each other through it.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const here = new URL('./', import.meta.url);

describe('src/config', () => {
  it('imports nothing of memgate outside itself', () => {
    const modules = readdirSync(here).filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'));
    expect(modules).toContain('settings.ts');
    let found = 0;
    for (const name of modules) {
      const text = readFileSync(new URL(name, here), 'utf8');
      const specifiers = [...text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+'([^']+)'/gm)].map(([, specifier]) => specifier ?? '');
      found += specifiers.length;
      expect(specifiers.filter((specifier) => specifier.startsWith('..')), name).toEqual([]);
    }
    // The pattern does find imports (./defaults.js, node:net, ajv, ...).
    expect(found).toBeGreaterThan(10);
  });
});
