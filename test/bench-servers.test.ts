import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { useMemcached } from './helpers/memcached.js';

/** Starts one bench case's server process and returns its URL and a way to stop it. */
async function startCase(name: string, servers: string): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/bench/server.ts', name, servers], { stdio: ['ignore', 'pipe', 'inherit'] });
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
      while (statuses.length < expected.length) statuses.push((await fetch(`${server.url}/check?event=bench&feature=same-client`)).status);
      expect(statuses).toEqual(expected);
    } finally {
      server.stop();
    }
  });
});
