import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseYamlText, YamlTextError } from './policy-yaml.js';

describe('parseYamlText', () => {
  it('reads a policy file as the yaml package does (core schema: times stay text, no merge keys)', () => {
    const text = [
      'events:',
      '  login:',
      '    limits: [{ limit: 5, window: 1m }, { limit: 0x10, window: 60 }]',
      '    overrides:',
      '      - { match: { feature: "10.0.0.1" }, until: 2026-02-31T23:59:59Z, limits: [{ limit: 1.5e3, window: ~ }] }',
      '    flags: [yes, no, true, False, null, .inf, 0o17, "007", 007]',
      '    merged: { <<: { a: 1 } }',
    ].join('\n');
    expect(parseYamlText(text)).toEqual(parse(text));
  });

  it('is null for an empty file or one of comments only', () => {
    expect(parseYamlText('')).toBeNull();
    expect(parseYamlText('# nothing yet\n')).toBeNull();
  });

  it('refuses bad YAML and duplicate keys at a line and column', () => {
    expect(() => parseYamlText('events:\n  a: 1\n  a: 2\n')).toThrow(/duplicated mapping key at line 3, column 3/);
    expect(() => parseYamlText('events:\n  login: [\n')).toThrow(YamlTextError);
    expect(() => parseYamlText('a: 1\n---\nb: 2\n')).toThrow(/single document/);
  });

  it('keeps aliases as shared values, and refuses aliases that expand past the bound of values', () => {
    expect(parseYamlText('base: &b { limit: 5, window: 1m }\nagain: *b\n', 100)).toEqual({
      base: { limit: 5, window: '1m' },
      again: { limit: 5, window: '1m' },
    });
    // Nine levels of ten aliases each: a billion values in a few hundred bytes.
    const lines = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]'];
    for (let level = 1; level <= 9; level++)
      lines.push(`a${level}: &a${level} [${Array.from({ length: 10 }, () => `*a${level - 1}`).join(', ')}]`);
    expect(() => parseYamlText(lines.join('\n'), 1_000_000)).toThrow(/aliases expand to more than 1000000 values/);
  });
});
