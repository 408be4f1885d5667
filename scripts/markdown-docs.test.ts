// The READMEs and docs/ as a reader meets them: every code fence closes (an unclosed one
// turns the rest of the page into code), every relative link and its #anchor lead somewhere,
// and every command they show names a tool that exists: an `npm run` script of package.json,
// or a `memgate` command.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';

const PAGES = [
  'README.md',
  'packages/client/README.md',
  'packages/limiter/README.md',
  ...readdirSync('docs')
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];
const SCRIPTS = Object.keys((JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: object }).scripts);
/** What `memgate NAME` runs (src/main.ts), besides the service's own flags. */
const MEMGATE_COMMANDS = ['serve', 'policies', 'usage', 'what-if'];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens; repeats numbered. */
function anchors(text: string): Set<string> {
  const found = new Set<string>();
  for (const [, heading] of text.matchAll(/^#{1,6} (.+)$/gm)) {
    const base = (heading ?? '')
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    let anchor = base;
    for (let n = 1; found.has(anchor); n++) anchor = `${base}-${n}`;
    found.add(anchor);
  }
  // Anchors a page sets by hand.
  for (const [, id] of text.matchAll(/<a (?:id|name)="([^"]+)"/g)) found.add(id ?? '');
  return found;
}

/** The page without its code blocks: links and commands there are examples, not the page's. */
function prose(text: string): string {
  return text.replace(/^(\s*)(```|~~~)[^\n]*\n[\s\S]*?^\1\2[ \t]*$/gm, '');
}

describe.each(PAGES)('%s', (page) => {
  const text = readFileSync(page, 'utf8');

  it('closes every code fence it opens', () => {
    let open: { fence: string; line: number } | undefined;
    text.split('\n').forEach((line, index) => {
      const fence = /^\s*(```|~~~)/.exec(line)?.[1];
      if (fence === undefined) return;
      if (open === undefined) open = { fence, line: index + 1 };
      else if (fence === open.fence && /^\s*(```|~~~)\s*$/.test(line)) open = undefined;
    });
    expect(open, `a fence opened on line ${open?.line} never closes`).toBeUndefined();
  });

  it('links only to files and headings that exist', () => {
    const broken: string[] = [];
    for (const [, target] of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (target === undefined || /^[a-z]+:/.test(target)) continue;
      const [path = '', anchor] = target.split('#');
      const file = path === '' ? page : normalize(join(dirname(page), path));
      if (!existsSync(file)) {
        broken.push(`${target}: no ${file}`);
        continue;
      }
      if (anchor !== undefined && file.endsWith('.md') && !anchors(readFileSync(file, 'utf8')).has(anchor))
        broken.push(`${target}: no heading #${anchor} in ${file}`);
    }
    expect(broken).toEqual([]);
  });

  it('shows only commands that exist', () => {
    const unknown: string[] = [];
    for (const [, name] of text.matchAll(/npm run (?:--silent )?([a-z][a-z:-]*)/g))
      if (name !== undefined && !SCRIPTS.includes(name)) unknown.push(`npm run ${name}`);
    // As code: `memgate NAME …` (not a quoted log line, which has a `;`), or a shell line `$ memgate NAME`.
    for (const [, name] of text.matchAll(/(?:`|^\$ )(?:npx )?memgate ([a-z][a-z-]*)\b(?![^`\n]*;)/gm))
      if (name !== undefined && !MEMGATE_COMMANDS.includes(name)) unknown.push(`memgate ${name}`);
    expect(unknown).toEqual([]);
  });
});
