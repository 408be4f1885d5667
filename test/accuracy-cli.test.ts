import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { useMemcached } from './helpers/memcached.js';

const run = promisify(execFile);
const accuracy = (...args: string[]) => run(process.execPath, ['--import', 'tsx', 'scripts/accuracy.ts', ...args], { maxBuffer: 10 * 1024 * 1024 });

describe('npm run accuracy', () => {
  it('replays shapes and a trace, prints tables and writes a Markdown report with SVG charts', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'memgate-accuracy-'));
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
    const { stdout, stderr } = await accuracy('--requests', '300', '--shapes', 'steady-1x,boundary', '--trace', trace, '--out', out);
    expect(stdout).toContain('steady-1x: one client, Poisson arrivals at 1× the limit. Limit 10 per 1m');
    expect(stdout).toMatch(/\| 1s buckets +\| +0% \| +0 \(0%\) \| +0 \(0%\) \|/);
    expect(stdout).toContain('access.log');
    expect(stderr).toContain('1 lines are not Common Log Format and were skipped; first: this line is not a log line');
    expect((await readdir(out)).sort()).toEqual(['cost-1m.svg', 'error-1m.svg', 'report.md']);
    expect(await readFile(join(out, 'error-1m.svg'), 'utf8')).toMatch(/^<svg[^>]*>.*Wrong decisions against granularity/s);
    const report = await readFile(join(out, 'report.md'), 'utf8');
    expect(report).toContain('# memgate accuracy report');
    expect(report).toContain('![wrong decisions against granularity, 1m window](error-1m.svg)');
    expect(report).toContain('| exact sliding log');
  });

  const memcached = useMemcached();
  it('counts in a real Memcached with --store memcached, deciding exactly as the embedded store', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'memgate-accuracy-'));
    const args = ['--requests', '400', '--shapes', 'bursts', '--seed', '5'];
    await accuracy(...args, '--out', join(dir, 'embedded'));
    const env = { ...process.env, MEMCACHED_SERVERS: memcached().servers };
    await run(process.execPath, ['--import', 'tsx', 'scripts/accuracy.ts', ...args, '--store', 'memcached', '--out', join(dir, 'memcached')], { env });
    const tables = async (name: string) => (await readFile(join(dir, name, 'report.md'), 'utf8')).split('\n').filter((line) => line.startsWith('|'));
    expect(await tables('memcached')).toEqual(await tables('embedded'));
  });

  it.each([
    [['--requests', 'lots'], '--requests must be a positive whole number'],
    [['--window', 'soon'], '--window must be a duration'],
    [['--shapes', 'sawtooth'], 'unknown shape "sawtooth"'],
    [['--trace', '/nonexistent.log', '--shapes', 'none'], 'cannot read the trace /nonexistent.log'],
    [['--store', 'redis'], '--store is embedded or memcached'],
  ])('refuses %j, saying why', async (args, message) => {
    await expect(accuracy(...args)).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining(message) as unknown });
  });
});
