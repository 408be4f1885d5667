import { execFile, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { useMemcached } from './helpers/memcached.js';

/** Starts one bench case's server process and returns its URL and a way to stop it. */
async function startCase(name: string, servers: string): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/bench/server.ts', name, servers], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => {
      reject(new Error(`exited with ${String(code)}`));
    });
    child.stdout.once('data', (chunk: Buffer) => {
      resolve((JSON.parse(chunk.toString()) as { port: number }).port);
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () => {
      child.removeAllListeners('exit');
      child.kill('SIGTERM');
    },
  };
}

describe('bench servers', () => {
  const memcached = useMemcached();

  it.each([
    ['floor', [200, 200, 200]],
    ['ceiling', [200, 200, 200]],
    ['peer', [200, 200, 200]],
    ['naive', [200, 200, 200]],
    ['memgate-60s', [200, 200, 200]],
    ['memgate-1d', [200, 200, 200]],
  ])('%s answers /check with %j', async (name, expected) => {
    const server = await startCase(name, memcached().servers);
    try {
      const statuses: number[] = [];
      while (statuses.length < expected.length)
        statuses.push((await fetch(`${server.url}/check?event=bench&feature=same-client`)).status);
      expect(statuses).toEqual(expected);
    } finally {
      server.stop();
    }
  });
});

describe('npm run bench', () => {
  it('leaves the docs alone without --write-docs, says how long it will take, and shows progress in lines off a terminal', async () => {
    const docs = await readFile('docs/performance.md', 'utf8');
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'scripts/bench.ts', '--suite', 'embedded'],
      {
        env: { ...process.env, CLI_PROGRESS_SECONDS: '1' },
      },
    );
    expect(stdout).toContain('| embedded store, in process, no HTTP |');
    const lines = stderr.split('\n').filter(Boolean);
    expect(lines[0]).toBe('bench: started, 0 s of about 30 s');
    expect(lines[1]).toMatch(/^\[0 s\] running embedded: about 30 s$/);
    // A line every second while it builds and measures, saying what it is doing: the build
    // takes under a second when dist/ is up to date, the measuring never does.
    const building = /^bench: \d+% \(.* of about 30 s\), building dist\/ \(npm run build\), \d+ s elapsed/;
    const measuring = /^bench: \d+% \(.*\), embedded: limiter\.check in process, /;
    expect(
      lines.every((line, i) => i < 2 || building.test(line) || measuring.test(line) || /^\[|^bench: done/.test(line)),
    ).toBe(true);
    expect(lines.some((line) => measuring.test(line))).toBe(true);
    expect(lines.at(-1)).toMatch(/^bench: done \(.*\) after \d+ s$/);
    expect(stderr).not.toContain('\r');
    expect(stderr).not.toContain('\u001b[');
    expect(await readFile('docs/performance.md', 'utf8')).toBe(docs);
  }, 180_000);
});
