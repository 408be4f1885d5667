import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { freePort } from '../scripts/lib/memcached-process.js';
import { useMemcached } from './helpers/memcached.js';

const run = promisify(execFile);
/** The lab as `npm run accuracy` runs it; resolves to exit code, stdout and stderr whatever the code. */
async function accuracy(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'scripts/accuracy.ts', ...args], {
      maxBuffer: 10 * 1024 * 1024,
      env: { ...process.env, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}
const lines = (text: string) => text.split('\n').filter(Boolean);
const tempDir = () => mkdtemp(join(tmpdir(), 'memgate-accuracy-'));

describe('npm run accuracy', () => {
  it('replays shapes and a trace, prints tables and writes a Markdown report with SVG charts', async () => {
    const dir = await tempDir();
    const trace = join(dir, 'access.log');
    await writeFile(
      trace,
      [
        'a.example - - [01/Aug/1995:00:00:01 -0400] "GET / HTTP/1.0" 200 1',
        'this line is not a log line',
        'a.example - - [01/Aug/1995:00:00:02 -0400] "GET /x HTTP/1.0" 200 1',
      ].join('\n'),
    );
    const out = join(dir, 'report');
    const { code, stdout, stderr } = await accuracy([
      '--requests',
      '300',
      '--shapes',
      'steady-1x,boundary',
      '--trace',
      trace,
      '--out',
      out,
    ]);
    expect(code).toBe(0);
    expect(stdout).toContain('steady-1x: one client, Poisson arrivals at 1× the limit. Limit 10 per 1m');
    expect(stdout).toMatch(/\| 1s buckets +\| +0% \| +0 \(0%\) \| +0 \(0%\) \|/);
    expect(stdout).toContain('access.log');
    expect(stderr).toContain('1 lines are not Common Log Format and were skipped; first: this line is not a log line');
    expect((await readdir(out)).sort()).toEqual(['cost-1m.svg', 'error-1m.svg', 'report.md', 'worst-1m.svg']);
    expect(await readFile(join(out, 'error-1m.svg'), 'utf8')).toMatch(
      /^<svg[^>]*>.*Wrong decisions against bucket size/s,
    );
    expect(await readFile(join(out, 'worst-1m.svg'), 'utf8')).toMatch(/^<svg[^>]*>.*Worst window admitted/s);
    const report = await readFile(join(out, 'report.md'), 'utf8');
    expect(report).toContain('# memgate accuracy report');
    expect(report).toContain('![wrong decisions against bucket size, 1m window](error-1m.svg)');
    expect(report).toContain('![worst window admitted over the limit, per scheme, 1m window](worst-1m.svg)');
    expect(report).toContain('| exact sliding log');
  });

  it('shows progress in lines when standard error is not a terminal', async () => {
    const { code, stderr } = await accuracy(
      ['--requests', '2000', '--shapes', 'steady-1x', '--workers', '1', '--out', await tempDir()],
      { CLI_PROGRESS_SECONDS: '0.1' },
    );
    expect(code).toBe(0);
    const progress = lines(stderr).filter((line) => line.startsWith('replaying: '));
    expect(progress[0]).toBe('replaying: started, 0 of 34,000 checks');
    expect(progress.at(-1)).toMatch(/^replaying: done \(34,000 of 34,000 checks\) after \d+ s$/);
    // Nothing redrawn in place: no carriage returns or escape sequences in a log.
    expect(stderr).not.toContain('\r');
    expect(stderr).not.toContain('\u001b[');
    const between = progress.slice(1, -1);
    expect(between.length).toBeGreaterThanOrEqual(2);
    for (const line of between)
      expect(line).toMatch(/^replaying: \d+% \([\d,]+ of 34,000 checks\), steady-1x, \d+ s elapsed/);
    // 34,000 replayed checks took 16 s of the default 20 on an idle 2-core host, over 20 on a busy one.
  }, 60_000);

  it('with --out -, writes report.md to standard output, and no file', async () => {
    const before = await readdir('.');
    const { code, stdout, stderr } = await accuracy(['--requests', '300', '--shapes', 'bursts', '--out', '-']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^# memgate accuracy report\n/);
    expect(stdout).toContain('### bursts, 1m window');
    expect(stdout).not.toContain('.svg');
    expect(stderr).toMatch(/requests through [\d,]+ limiter checks/);
    expect(existsSync('-')).toBe(false);
    expect(await readdir('.')).toEqual(before);
  });

  const memcached = useMemcached();
  it('counts in a real Memcached with --store memcached, deciding exactly as the embedded store', async () => {
    const dir = await tempDir();
    const args = ['--requests', '400', '--shapes', 'bursts', '--seed', '5'];
    expect((await accuracy([...args, '--out', join(dir, 'embedded')])).code).toBe(0);
    expect(
      (
        await accuracy([...args, '--store', 'memcached', '--out', join(dir, 'memcached')], {
          MEMCACHED_SERVERS: memcached().servers,
        })
      ).code,
    ).toBe(0);
    const tables = async (name: string) =>
      (await readFile(join(dir, name, 'report.md'), 'utf8')).split('\n').filter((line) => line.startsWith('|'));
    expect(await tables('memcached')).toEqual(await tables('embedded'));
  }, 60_000);

  it('fails in one line, exit 1, when the Memcached does not answer, having written nothing', async () => {
    const out = join(await tempDir(), 'report');
    const { code, stdout, stderr } = await accuracy(
      ['--requests', '100', '--shapes', 'bursts', '--store', 'memcached', '--out', out],
      { MEMCACHED_SERVERS: `127.0.0.1:${await freePort()}` },
    );
    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(lines(stderr)).toEqual([expect.stringMatching(/^accuracy: Memcached does not answer: .*ECONNREFUSED/)]);
    expect(existsSync(out)).toBe(false);
  });

  it.concurrent.for<[string[], string]>([
    [['--requests', 'lots'], '--requests must be a positive whole number (got "lots")'],
    [['--window', 'soon'], '--window must be a duration like 60s, 5m or 1d (got "soon")'],
    [
      ['--shapes', 'sawtooth'],
      'unknown shape "sawtooth"; the shapes are steady-0.5x, steady-1x, steady-2x, bursts, boundary, zipf, diurnal',
    ],
    [
      ['--trace', '/nonexistent.log', '--shapes', 'none'],
      'cannot read the trace /nonexistent.log: no such file or directory',
    ],
    [['--store', 'redis'], '--store is embedded or memcached'],
    [['--out', 'package.json'], '--out package.json is a file; give a directory, or - for standard output'],
    [['--out', ''], '--out must name a directory, or - for standard output'],
    [['extra'], 'unexpected argument "extra"'],
  ])('refuses %j in one line, exit 2, before any work', async ([args, message], { expect }) => {
    const { code, stdout, stderr } = await accuracy(args);
    expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
    expect(lines(stderr)).toEqual([`accuracy: ${message} (npm run accuracy -- --help)`]);
  });

  it('refuses a MEMCACHED_SERVERS it cannot read as bad configuration, exit 2', async () => {
    const { code, stderr } = await accuracy(['--store', 'memcached', '--out', '-'], {
      MEMCACHED_SERVERS: 'cache:port',
    });
    expect(code).toBe(2);
    expect(lines(stderr)).toEqual([expect.stringMatching(/^accuracy: MEMCACHED_SERVERS: .*"cache:port"/)]);
  });
});
