import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  createEmbeddedStore,
  createLimiter,
  createMemcachedStore,
  LimiterInputError,
  PolicyError,
} from '../src/index.js';
import { uniquePrefix, useMemcached } from './helpers/memcached.js';
import { freePort } from '../scripts/lib/memcached-process.js';

const run = promisify(execFile);

/** The README's code block under `heading`, as written. */
async function readmeBlock(heading: string): Promise<string> {
  const readme = await readFile('README.md', 'utf8');
  const section = readme.slice(readme.indexOf(`\n${heading}\n`));
  const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (block === undefined) throw new Error(`README.md has no ts block under ${heading}`);
  return block;
}

describe('memgate as a library', () => {
  const memcached = useMemcached();
  const ownMemcached = useMemcached({ own: true });

  it("runs the README's example as written, on Memcached, and lets the process exit", { timeout: 30_000 }, async () => {
    // An app of its own, with memgate-limiter and memgate as its dependencies (this checkout's, built).
    const app = await mkdtemp(join(tmpdir(), 'memgate-readme-'));
    await writeFile(join(app, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    await mkdir(join(app, 'node_modules'));
    await symlink(resolve('packages/limiter'), join(app, 'node_modules', 'memgate-limiter'));
    await symlink(resolve('.'), join(app, 'node_modules', 'memgate'));
    await writeFile(join(app, 'example.ts'), await readmeBlock('## As a library'));
    // Its own memcached: what the example counts is all there is.
    const started = Date.now();
    const { stdout } = await run(process.execPath, [resolve('node_modules/tsx/dist/cli.mjs'), 'example.ts'], {
      cwd: app,
      env: { PATH: process.env.PATH, MEMCACHED_SERVERS: ownMemcached().servers },
      // Without close(), the store's sockets keep the process alive: this would time out.
      timeout: 15_000,
    });
    expect(stdout.trim()).toBe('true 4');
    expect(Date.now() - started).toBeLessThan(15_000);

    // Memcached unreachable: still answered (degraded), one warning, and health() says so.
    const port = await freePort();
    const unreachable = await run(process.execPath, [resolve('node_modules/tsx/dist/cli.mjs'), 'example.ts'], {
      cwd: app,
      env: { PATH: process.env.PATH, MEMCACHED_SERVERS: `127.0.0.1:${port}` },
      timeout: 15_000,
    });
    expect(unreachable.stdout).toMatch(/^true /);
    const lines = unreachable.stderr.trim().split('\n');
    expect(lines.filter((line) => line.includes(`Memcached 127.0.0.1:${port} cannot be reached`))).toHaveLength(1);
    expect(lines.at(-1)).toMatch(new RegExp(`^not counting: .*127\\.0\\.0\\.1:${port}`));
  });

  it('limits with policies given inline, on Memcached', async () => {
    const store = createMemcachedStore({ servers: memcached().servers });
    const limiter = createLimiter({
      policies: { events: { login: { limits: [{ limit: 2, window: '1m' }] } } },
      store,
      keyPrefix: uniquePrefix(),
    });
    const results = [];
    for (let i = 0; i < 3; i++)
      results.push((await limiter.check({ event: 'login', feature: 'alice@example.com' })).allowed);
    expect(results).toEqual([true, true, false]);
    await store.close();
  });

  it('refuses invalid inline policies with the same messages as a file', () => {
    expect(() =>
      createLimiter({
        policies: { events: { login: { limits: [{ limit: 2, window: '1y' }] } } },
        store: createEmbeddedStore(),
      }),
    ).toThrow(PolicyError);
  });

  it('throws LimiterInputError, with a code, for bad requests', async () => {
    const limiter = createLimiter({
      policies: { events: { login: { limits: [{ limit: 2, window: 60 }] } } },
      store: createEmbeddedStore(),
    });
    await expect(limiter.check({ event: 'login', feature: '' })).rejects.toBeInstanceOf(LimiterInputError);
  });
});
