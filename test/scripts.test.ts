import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { freePort } from '../scripts/lib/memcached-process.js';

const run = promisify(execFile);
/** Runs a script as `npm run NAME` does, without npm; resolves to exit code, stdout and stderr whatever the code. */
async function script(
  file: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', `scripts/${file}`, ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}
const lines = (text: string) => text.split('\n').filter(Boolean);

const CLIS = [
  ['policies', 'check-policies.ts'],
  ['accuracy', 'accuracy.ts'],
  ['load', 'load.ts'],
  ['bench', 'bench.ts'],
  ['usage', 'usage.ts'],
  ['dashboard-screenshot', 'dashboard-screenshot.ts'],
] as const;

describe('every command-line tool', () => {
  it.each(CLIS)('npm run %s -- --help prints its usage on stdout and exits 0', async (name, file) => {
    const { code, stdout, stderr } = await script(file, ['--help']);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toMatch(new RegExp(`^usage: npm run ${name} -- `));
  });

  it.each(CLIS)('npm run %s refuses an unknown option in one line, exit 2', async (name, file) => {
    const { code, stdout, stderr } = await script(file, ['--frobnicate']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(lines(stderr)).toEqual([`${name}: Unknown option '--frobnicate' (npm run ${name} -- --help)`]);
  });

  it('prints a failure as one line, and its stack only with LOG_LEVEL=debug', async () => {
    const closed = `127.0.0.1:${await freePort()}`;
    const quiet = await script('bench.ts', ['--memcached', closed]);
    expect(quiet.code).toBe(1);
    expect(lines(quiet.stderr)).toEqual([`bench: the Memcached at ${closed} does not answer: ECONNREFUSED`]);
    const debug = await script('bench.ts', ['--memcached', closed], { ...process.env, LOG_LEVEL: 'debug' });
    expect(debug.code).toBe(1);
    expect(lines(debug.stderr)[0]).toBe(quiet.stderr.trim());
    expect(debug.stderr).toMatch(/\n\s+at .*bench\.ts/);
  });
});

describe('npm run policies', () => {
  const checkPolicies = (...args: string[]) => script('check-policies.ts', args);

  it('prints each limit with its keys per check and items per feature', async () => {
    const { code, stdout } = await checkPolicies('config/policies.yaml');
    expect(code).toBe(0);
    expect(stdout).toContain('config/policies.yaml: 3 events, valid');
    expect(stdout).toMatch(/login-1d \(100\)\s+sliding, whole edge\s+1d\s+1h 1m 1s\s+142\s+83\b/);
    expect(stdout).toContain('export: 1 increment and up to 1 keys per check, 3 items per active feature');
  });

  it('fails with exit 1 and the problems of a bad file', async () => {
    const path = join(await mkdtemp(join(tmpdir(), 'memgate-')), 'bad.yaml');
    await writeFile(path, 'events:\n  a:\n    limits:\n      - { limit: 1, window: 1d, granularity: 7s }\n');
    const { code, stderr } = await checkPolicies(path);
    expect(code).toBe(1);
    expect(stderr).toContain('event "a", field limits[0].window: 1d is not a multiple of the granularity 7s');
  });

  it.each([
    [[], 'policies: missing FILE'],
    [['config/policies.yaml', 'config/policies.yaml'], 'policies: unexpected argument "config/policies.yaml"'],
    [['/nonexistent/policies.yaml'], 'policies: cannot read /nonexistent/policies.yaml: no such file or directory'],
    [['config'], 'policies: config is not a file'],
    [['--', '-'], 'policies: give a policy file by its path; standard input is not read'],
  ])('refuses %j in one line, exit 2', async (args, message) => {
    const { code, stdout, stderr } = await checkPolicies(...args);
    expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
    expect(lines(stderr)).toEqual([`${message} (npm run policies -- --help)`]);
  });
});
