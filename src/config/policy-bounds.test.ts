import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseAllDocuments, stringify } from 'yaml';
import { DEFAULTS } from './defaults.js';
import { parsePolicyText, PolicyError } from './policies.js';
import { textBoundsProblem, textShape } from './policy-bounds.js';

/** Every YAML and JSON file of the repository's configuration, examples and fixtures. */
function configFiles(): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (/\.(ya?ml|json)$/.test(name)) found.push(path);
    }
  };
  for (const dir of ['config', 'examples', 'test/fixtures']) walk(dir);
  return [...found, 'docs/api-policies.yaml'];
}

/** The true nesting of a parsed value: maps and lists each a level. */
function trueDepth(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(trueDepth));
  if (value !== null && typeof value === 'object') return 1 + Math.max(0, ...Object.values(value).map(trueDepth));
  return 0;
}

describe('textShape', () => {
  it('never under-counts the nesting of real files, and keeps them within the bounds', () => {
    const files = configFiles();
    expect(files.length).toBeGreaterThan(10);
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      expect(textBoundsProblem(text), file).toBeUndefined();
      // Fixtures of broken files have no true depth to compare with.
      const parsed = file.endsWith('.json') ? [] : parseAllDocuments(text);
      if (!Array.isArray(parsed) || parsed.some((document) => document.errors.length > 0)) continue;
      const documents = file.endsWith('.json') ? [JSON.parse(text) as unknown] : parsed.map((document) => document.toJS() as unknown);
      expect(textShape(text).depth, file).toBeGreaterThanOrEqual(Math.max(...documents.map(trueDepth)));
    }
  });

  it('never under-counts the nesting of any value, written as YAML in block or flow style, or as JSON', () => {
    const key = fc.string({ minLength: 1, maxLength: 6 });
    const { tree } = fc.letrec((tie) => ({
      tree: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null)),
        fc.array(tie('tree'), { maxLength: 3 }),
        fc.dictionary(key, tie('tree'), { maxKeys: 3 }),
      ),
    }));
    fc.assert(
      fc.property(tree, fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 4 }), (value, flowLevel, indent) => {
        const depth = trueDepth(value);
        for (const text of [
          stringify(value, { indent }),
          stringify(value, { indent, flowCollectionPadding: false, collectionStyle: 'flow' }),
          stringify({ a: value }, { indent }).replace(/^/gm, ' '.repeat(flowLevel % 3)),
          stringify(value, { indent, indentSeq: false }),
          JSON.stringify(value),
          JSON.stringify(value, null, indent),
        ]) {
          expect(textShape(text).depth, text).toBeGreaterThanOrEqual(depth);
        }
      }),
      { numRuns: Number(process.env.RUNS ?? 300) },
    );
  });

  it('counts block and flow nesting and items in items, as the parser reads quotes and comments', () => {
    expect(textShape('a:\n  b:\n    c: 1\n').depth).toBe(3);
    expect(textShape('a: [[[1]]]\n').depth).toBe(4);
    expect(textShape('- - - x\n').depth).toBe(4);
    expect(textShape('{"a": {"b": [1, {"c": 2}]}}').depth).toBeGreaterThanOrEqual(4);
    expect(textShape('# [[[[[[\na: 1 # [[[[\n').depth).toBe(1);
    expect(textShape('a: "[[[[\n  [[[["\nb: \'{{\'\nc: |\n  [[[[\n').depth).toBe(1);
    // A stray quote hides nothing from the count.
    expect(textShape(`a: :'\nb: ${'['.repeat(100)}${']'.repeat(100)}\n`).depth).toBe(101);
  });

  it('refuses a file nested thousands of levels deep before parsing it, naming the line', () => {
    const flow = `events:\n  api:\n    limits: ${'['.repeat(5000)}${']'.repeat(5000)}\n`;
    let block = 'events:\n  api:\n    limits:\n';
    for (let i = 0, indent = '      '; i < 300; i++, indent += '  ') block += `${indent}- x:\n`;
    const json = `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`;
    for (const [text, line] of [
      [flow, 3],
      [block, 3 + DEFAULTS.policyFileMaxDepth - 2],
      [json, 1],
    ] as const) {
      const started = performance.now();
      const problem = textBoundsProblem(text);
      expect(problem).toMatch(new RegExp(`^nested \\d+ levels deep at line \\d+, more than the ${DEFAULTS.policyFileMaxDepth}`));
      expect(Number(/at line (\d+)/.exec(problem ?? '')?.[1])).toBeGreaterThanOrEqual(line);
      expect(performance.now() - started).toBeLessThan(1000);
    }
    expect(() => parsePolicyText(flow, 'deep.yaml')).toThrow(PolicyError);
    expect(() => parsePolicyText(json, 'deep.json')).toThrow(/nested \d+ levels deep/);
  });

  it('refuses a file of too many values, or too many bytes, before parsing it', () => {
    const many = `events:\n  api:\n    limits: [{ limit: 1, window: 1m }]\n    x: [${Array(1_050_000).fill(1).join(',')}]\n`;
    expect(Buffer.byteLength(many)).toBeLessThan(DEFAULTS.policyFileMaxBytes);
    expect(textBoundsProblem(many)).toMatch(/^holds about \d+ values \(keys and items\), more than the 1000000/);
    const large = `# ${'x'.repeat(DEFAULTS.policyFileMaxBytes)}\n`;
    expect(textBoundsProblem(large)).toMatch(/^\d+ bytes, more than the 4194304 a file may be/);
  });
});
