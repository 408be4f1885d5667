// The README's tables of error codes and settings are generated from the tables in
// src/config. When one is stale this fails with the difference; to write them again:
//   npx vitest run src/config/reference-docs.test.ts -u
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from './error-codes.js';

const README = new URL('../../README.md', import.meta.url);

/** `text` with the lines between the markers of section `name` replaced by `body`. */
function withSection(text: string, name: string, body: string): string {
  const begin = `<!-- generated: ${name} (src/config/reference-docs.test.ts) -->\n`;
  const end = `<!-- end: ${name} -->\n`;
  const from = text.indexOf(begin);
  const to = text.indexOf(end, from);
  if (from === -1 || to === -1) throw new Error(`README.md has no section ${JSON.stringify(begin.trim())} … ${JSON.stringify(end.trim())}`);
  return text.slice(0, from + begin.length) + body + text.slice(to);
}

function errorTable(): string {
  const rows = Object.entries(ERROR_CODES).map(([code, { status, when }]) => `| ${status} | \`${code}\` | ${when} |`);
  return ['| status | code | when |', '|---|---|---|', ...rows, ''].join('\n');
}

describe('the README', () => {
  it('lists every error code from src/config/error-codes.ts', async () => {
    const readme = readFileSync(README, 'utf8');
    await expect(withSection(readme, 'error codes', errorTable())).toMatchFileSnapshot(README.pathname);
  });
});
