// Every command the README and docs/ show with its arguments parses them: run as shown, with
// CLI_DRY_RUN=1 (src/commands/command-line.ts), it exits 0 having done nothing. Commands with
// placeholders (FILE, [--top 10], spark|table|json, …) are a synopsis, not a command line.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const PAGES = [
  'README.md',
  ...readdirSync('docs')
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];
/**
 * What each tool is, run without npm: node's arguments for a file under scripts/ (through tsx,
 * as its npm script runs it), or for the memgate command as built (its bin, dist/main.js).
 */
const TOOLS: Record<string, string[]> = {
  'npm run accuracy --': ['--import', 'tsx', 'scripts/accuracy.ts'],
  'npm run bench --': ['--import', 'tsx', 'scripts/bench.ts'],
  'npm run load --': ['--import', 'tsx', 'scripts/load.ts'],
  'npm run dashboard-screenshot --': ['--import', 'tsx', 'scripts/dashboard-screenshot.ts'],
  'memgate policies': ['dist/main.js', 'policies'],
  'memgate usage': ['dist/main.js', 'usage'],
};

/** Each command line shown in a code span, as [page, the command, the tool, its arguments]. */
function shownCommands(): [string, string, string[], string[]][] {
  const found = new Map<string, [string, string, string[], string[]]>();
  for (const page of PAGES) {
    for (const [, span] of readFileSync(page, 'utf8').matchAll(
      /`((?:npx )?(?:npm run (?:--silent )?[a-z-]+ --|memgate [a-z]+) [^`]+)`/g,
    )) {
      const command = (span ?? '')
        .replace(/^npx /, '')
        .replace('npm run --silent ', 'npm run ')
        .replace(/\s*>.*$/, '');
      const tool = Object.keys(TOOLS).find((name) => command.startsWith(`${name} `));
      if (tool === undefined) continue;
      const args = command
        .slice(tool.length + 1)
        .split(/\s+/)
        .filter(Boolean);
      // A synopsis: names to fill in, optional parts, choices.
      if (args.some((arg) => /^[A-Z]+$|[[\]|…]/.test(arg))) continue;
      found.set(command, [page, command, TOOLS[tool] ?? [], args]);
    }
  }
  return [...found.values()];
}

describe('the commands the docs show', () => {
  const commands = shownCommands();

  it('are found: the tools the docs show most, with their arguments', () => {
    const shown = new Set(commands.map(([, command]) => Object.keys(TOOLS).find((tool) => command.startsWith(tool))));
    for (const tool of ['npm run accuracy --', 'npm run bench --', 'npm run load --', 'memgate policies'])
      expect(shown.has(tool), tool).toBe(true);
  });

  it.concurrent.for(commands)('%s: %s parses its arguments', async ([, , tool, args], { expect }) => {
    const { stderr, code } = await run(process.execPath, [...tool, ...args], {
      env: { ...process.env, CLI_DRY_RUN: '1' },
    }).then(
      ({ stderr }) => ({ stderr, code: 0 }),
      (error: unknown) => error as { stderr: string; code: number },
    );
    // Nothing printed but --help's usage, on stdout.
    expect({ stderr, code }).toEqual({ stderr: '', code: 0 });
  });
});
