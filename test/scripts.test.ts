import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { freePort } from '../scripts/lib/memcached-process.js';
import { loadEnvoyConfig } from '../src/config/envoy-config.js';
import { countedEnvoyLimits, type EnvoyLimitEvent } from '../src/config/envoy-events.js';
import { envoyEventName } from '../src/config/envoy-match.js';
import { PolicySet } from '../src/config/policies.js';
import { planEvents } from '../src/counting/plan.js';
import { policySizing } from '../src/counting/sizing.js';

const run = promisify(execFile);
/**
 * Runs a tool as `npm run NAME` does, without npm: `file` under scripts/ through tsx, or a
 * `memgate` command (`memgate policies`) as built, the package's bin; resolves to exit code,
 * stdout and stderr whatever the code.
 */
async function script(
  file: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const command = file.startsWith('memgate ')
    ? ['dist/main.js', file.slice('memgate '.length)]
    : ['--import', 'tsx', `scripts/${file}`];
  try {
    const { stdout, stderr } = await run(process.execPath, [...command, ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}
const lines = (text: string) => text.split('\n').filter(Boolean);

/** Each tool, how it is run, and how its usage and errors name that (`npm run NAME --`, or `memgate NAME`). */
const CLIS = [
  ['policies', 'memgate policies', 'memgate policies'],
  ['accuracy', 'accuracy.ts', 'npm run accuracy --'],
  ['load', 'load.ts', 'npm run load --'],
  ['bench', 'bench.ts', 'npm run bench --'],
  ['usage', 'memgate usage', 'memgate usage'],
  ['dashboard-screenshot', 'dashboard-screenshot.ts', 'npm run dashboard-screenshot --'],
] as const;

describe('every command-line tool', () => {
  it.concurrent.for(CLIS)(
    '%s --help prints its usage on stdout and exits 0',
    async ([, file, invocation], { expect }) => {
      const { code, stdout, stderr } = await script(file, ['--help']);
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      expect(stdout.startsWith(`usage: ${invocation} `)).toBe(true);
    },
  );

  it.concurrent.for(CLIS)(
    '%s refuses an unknown option in one line, exit 2',
    async ([name, file, invocation], { expect }) => {
      const { code, stdout, stderr } = await script(file, ['--frobnicate']);
      expect(code).toBe(2);
      expect(stdout).toBe('');
      expect(lines(stderr)).toEqual([`${name}: Unknown option '--frobnicate' (${invocation} --help)`]);
    },
  );

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

describe('memgate policies', () => {
  const checkPolicies = (...args: string[]) => script('memgate policies', args);
  /** The table's rows, cells split where the columns are (two spaces or more). */
  const rowsOf = (stdout: string) => lines(stdout).map((line) => line.trim().split(/\s{2,}/));
  const rowOf = (stdout: string, descriptor: string) => rowsOf(stdout).find((row) => row[0] === descriptor);
  /** What the library plans for an Envoy limit: the columns every counted descriptor's row ends with. */
  const sizingOf = (limit: EnvoyLimitEvent) => {
    const policies = new PolicySet([limit.policy], 'test');
    const [event] = policySizing(policies, planEvents(policies)).events;
    const sized = event?.limits[0];
    if (!event || !sized) throw new Error(`no sizing for ${limit.policy.event}`);
    return [String(sized.keysPerCheck.max), String(sized.keysPerCheck.mean), String(sized.itemsPerFeature)];
  };

  it('prints each limit with its keys per check and items per feature', async () => {
    const { code, stdout } = await checkPolicies('config/policies.yaml');
    expect(code).toBe(0);
    expect(stdout).toContain('config/policies.yaml: 3 events, valid');
    expect(stdout).toMatch(/login-1d \(100\)\s+sliding, whole edge\s+1d\s+1h 1m 1s\s+142\s+83\b/);
    expect(stdout).toContain('export: 1 increment and up to 1 keys per check, 3 items per active feature');
  });

  it('reads a JSON policy file as memgate policies', async () => {
    const path = join(await mkdtemp(join(tmpdir(), 'memgate-')), 'p.json');
    await writeFile(
      path,
      JSON.stringify({ events: { api: { algorithm: 'fixed', limits: [{ limit: 7, window: '1h' }] } } }),
    );
    const { code, stdout } = await checkPolicies(path);
    expect(code).toBe(0);
    expect(stdout).toContain(`${path}: 1 events, valid`);
    expect(stdout).toMatch(/api\s+api-1h \(7\)\s+fixed\s+1h\s+1h\s+1\s+1\s+3\n/);
  });

  it('checks a file with events as memgate policies even when it also has a domain', async () => {
    const path = join(await mkdtemp(join(tmpdir(), 'memgate-')), 'both.yaml');
    await writeFile(path, 'domain: shop\nevents:\n  a:\n    limits: [{ limit: 1, window: 1m }]\n');
    const { code, stdout, stderr } = await checkPolicies(path);
    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(lines(stderr)).toEqual([
      `invalid policies in ${path}:`,
      '  - top level: unknown key "domain"; the top level takes gateway, events',
    ]);
  });

  it('fails with exit 1 and the problems of a bad file', async () => {
    const path = join(await mkdtemp(join(tmpdir(), 'memgate-')), 'bad.yaml');
    await writeFile(path, 'events:\n  a:\n    limits:\n      - { limit: 1, window: 1d, granularity: 7s }\n');
    const { code, stderr } = await checkPolicies(path);
    expect(code).toBe(1);
    expect(stderr).toContain('event "a", field limits[0].window: 1d is not a multiple of the granularity 7s');
  });

  it('lists a policy file limit that would read too many keys per check as a problem, exit 1', async () => {
    const path = join(await mkdtemp(join(tmpdir(), 'memgate-')), 'slow.yaml');
    await writeFile(path, 'events:\n  slow:\n    limits:\n      - { limit: 5, window: 7007, granularity: 7 }\n');
    const { code, stdout, stderr } = await checkPolicies(path);
    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(lines(stderr)).toEqual([
      `invalid policies in ${path}:`,
      expect.stringMatching(
        /^ {2}- event "slow", field limits\[0\]: a 7007s window in 7s buckets reads up to \d+ keys per check \(at most 1000\)/,
      ),
    ]);
  });

  it('tells an envoyproxy/ratelimit file by its domain and prints every descriptor of it, counted or not', async () => {
    const file = 'test/fixtures/envoy-cli/tree.yaml';
    const { code, stdout, stderr } = await checkPolicies(file);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const config = await loadEnvoyConfig(file);
    const limits = countedEnvoyLimits(config);
    const limitAt = (descriptor: string) => {
      const limit = limits.find((l) => l.path.join('.') === descriptor);
      if (!limit) throw new Error(`no counted limit at ${descriptor}`);
      return limit;
    };
    expect(lines(stdout)[0]).toBe(`${file}: 1 domain, 11 descriptors, ${limits.length} counted, valid`);
    expect(limits).toHaveLength(7);
    // The whole tree, in the file's order, each descriptor before the ones nested in it.
    expect(
      rowsOf(stdout)
        .slice(1)
        .map((row) => row[0]),
    ).toEqual([
      'descriptor',
      `domain "shop" (${file})`,
      'remote_address',
      'tenant_acme',
      'tenant_acme.route',
      'tenant_acme.route_checkout',
      'path_/export/*',
      'path_/static/*',
      'batch',
      'probe',
      'blocked',
      'user',
      'path_/healthz',
    ]);
    expect(rowOf(stdout, 'remote_address')).toEqual([
      'remote_address',
      '100 per minute',
      'envoy:shop.remote_address',
      'per remote_address',
      'fixed',
      '1m',
      '1m',
      ...sizingOf(limitAt('remote_address')),
    ]);
    expect(rowOf(stdout, 'tenant_acme')).toEqual([
      'tenant_acme',
      'none',
      '-',
      '-',
      'no limit of its own: leads to 2 nested',
    ]);
    expect(rowOf(stdout, 'tenant_acme.route')).toEqual([
      'tenant_acme.route',
      '5 per second',
      'envoy:shop.tenant_acme.route',
      'per route',
      'fixed',
      '1s',
      '1s',
      ...sizingOf(limitAt('tenant_acme.route')),
      'name "acme-route"',
    ]);
    expect(rowOf(stdout, 'tenant_acme.route_checkout')?.slice(2, 4)).toEqual([
      'envoy:shop.tenant_acme.route_checkout',
      'one',
    ]);
    expect(rowOf(stdout, 'tenant_acme.route_checkout')?.at(-1)).toBe('replaces "acme-route"');
    // A path with characters outside [A-Za-z0-9_-] is counted under a hashed event name: the one printed is the one counted.
    const exportEvent = envoyEventName('shop', ['path_/export/*']);
    expect(exportEvent).toMatch(/-h[0-9a-f]{20}$/);
    expect(rowOf(stdout, 'path_/export/*')?.slice(1, 4)).toEqual(['10 per hour', exportEvent, 'per path']);
    expect(rowOf(stdout, 'path_/static/*')).toEqual([
      'path_/static/*',
      '1000 per day',
      envoyEventName('shop', ['path_/static/*']),
      'one',
      'fixed',
      '1d',
      '1d',
      ...sizingOf(limitAt('path_/static/*')),
      'matching values share one counter',
    ]);
    expect(rowOf(stdout, 'batch')).toEqual(['batch', 'unlimited', '-', '-', 'answers OK, counts nothing']);
    expect(rowOf(stdout, 'probe')?.slice(1, 4)).toEqual(['1 per hour', 'envoy:shop.probe', 'per probe']);
    expect(rowOf(stdout, 'probe')?.at(-1)).toBe('shadow mode: counted as if enforced, always answers OK');
    expect(rowOf(stdout, 'blocked')).toEqual([
      'blocked',
      '0 per minute',
      '-',
      '-',
      'denies every request, counts nothing',
    ]);
    expect(rowOf(stdout, 'user')).toEqual([
      'user',
      '5 per 90s',
      'envoy:shop.user',
      'per user',
      'sliding, whole edge',
      '90s',
      '1m 10s',
      ...sizingOf(limitAt('user')),
    ]);
    expect(rowOf(stdout, 'path_/healthz')).toEqual([
      'path_/healthz',
      'none',
      '-',
      '-',
      'no limit: a request ending here is not limited',
    ]);
  });

  it('checks a directory as an Envoy configuration: its .yaml and .yml files in name order, no dot files', async () => {
    const dir = 'test/fixtures/envoy/dir';
    const { code, stdout, stderr } = await checkPolicies(dir);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(lines(stdout)[0]).toBe(`${dir}: 2 domains, 4 descriptors, 3 counted, valid`);
    expect(rowsOf(stdout).map((row) => row[0])).toEqual([
      lines(stdout)[0],
      'descriptor',
      `domain "edge-api" (${join(dir, 'api.yaml')})`,
      'remote_address',
      'path_/healthz',
      'path_/export/*',
      `domain "login" (${join(dir, 'login.yml')})`,
      'user',
    ]);
    const [user] = countedEnvoyLimits(await loadEnvoyConfig(join(dir, 'login.yml')));
    if (!user) throw new Error('login.yml has no counted limit');
    expect(rowOf(stdout, 'user')).toEqual([
      'user',
      '5 per 90s',
      'envoy:login.user',
      'per user',
      'sliding, whole edge',
      '90s',
      '1m 10s',
      ...sizingOf(user),
    ]);
  });

  it('lists every problem of a bad Envoy file with its file, domain, descriptor path and field, exit 1', async () => {
    const file = 'test/fixtures/envoy-cli/bad.yaml';
    const { code, stdout, stderr } = await checkPolicies(file);
    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(lines(stderr)).toEqual([
      `invalid policies in ${file}:`,
      `  - ${file}: domain "edge", descriptor remote_address (descriptors[0]), field rate_limit.unit: must be one of second, minute, hour, day, week, month, year (got "fortnight")`,
      `  - ${file}: domain "edge", descriptor tenant_acme.route (descriptors[1].descriptors[0]), field rate_limit.requests_per_unit: missing: give the number of requests per unit (0 denies every request)`,
      `  - ${file}: domain "edge", descriptor tenant_acme.route_checkout (descriptors[1].descriptors[1]), field rate_limt: unknown key "rate_limt"`,
      `  - ${file}: domain "edge", descriptor user (descriptors[2]), field rate_limit.window: 90s is not a multiple of the granularity 7s`,
    ]);
  });

  it('names the descriptor whose sliding window would read too many keys per check, exit 1', async () => {
    const file = 'test/fixtures/envoy-cli/too-many-keys.yaml';
    const { code, stdout, stderr } = await checkPolicies(file);
    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(lines(stderr)).toEqual([
      `invalid policies in ${file}:`,
      expect.stringMatching(
        /^ {2}- test\/fixtures\/envoy-cli\/too-many-keys\.yaml: domain "slow", descriptor tenant\.report \(descriptors\[1\]\.descriptors\[0\]\), field rate_limit: a 7007s window in 7s buckets reads up to \d+ keys per check \(at most 1000\); use a granularity that divides 60, or a coarser one$/,
      ),
    ]);
  });

  it('refuses a domain defined in two files of a directory, and a directory with no configuration file, exit 1', async () => {
    const clash = 'test/fixtures/envoy/clash';
    const refused = await checkPolicies(clash);
    expect({ code: refused.code, stdout: refused.stdout }).toEqual({ code: 1, stdout: '' });
    expect(lines(refused.stderr)).toEqual([
      `invalid policies in ${clash}:`,
      `  - ${join(clash, 'b.yaml')}: domain "shared" is already defined in ${join(clash, 'a.yaml')}; each domain belongs to one file (MEMGATE_ENVOY_MERGE_DOMAINS=on, upstream's MERGE_DOMAIN_CONFIG=true, merges them)`,
    ]);
    // Merged as the service would merge them, named by upstream's variable; a bad switch is named.
    const merged = await script('memgate policies', [clash], { ...process.env, MERGE_DOMAIN_CONFIG: 'true' });
    expect(merged.code).toBe(0);
    expect(merged.stdout).toMatch(/\bk\b[\s\S]*\bother\b/);
    const badSwitch = await script('memgate policies', [clash], { ...process.env, MEMGATE_ENVOY_MERGE_DOMAINS: 'yes' });
    expect({ code: badSwitch.code, stdout: badSwitch.stdout }).toEqual({ code: 2, stdout: '' });
    expect(badSwitch.stderr).toContain('MEMGATE_ENVOY_MERGE_DOMAINS must be on or off (got "yes")');
    const empty = await mkdtemp(join(tmpdir(), 'memgate-'));
    await writeFile(join(empty, 'notes.txt'), 'domain: not read\n');
    const nothing = await checkPolicies(empty);
    expect({ code: nothing.code, stdout: nothing.stdout }).toEqual({ code: 1, stdout: '' });
    expect(lines(nothing.stderr)).toEqual([`invalid policies in ${empty}:`, '  - holds no .yaml or .yml file']);
  });

  it.concurrent.for<[string[], string]>([
    [[], 'policies: missing FILE'],
    [['config/policies.yaml', 'config/policies.yaml'], 'policies: unexpected argument "config/policies.yaml"'],
    [['/nonexistent/policies.yaml'], 'policies: cannot read /nonexistent/policies.yaml: no such file or directory'],
    [['/dev/null'], 'policies: /dev/null is neither a file nor a directory'],
    [['--', '-'], 'policies: give a policy file by its path; standard input is not read'],
  ])('refuses %j in one line, exit 2', async ([args, message], { expect }) => {
    const { code, stdout, stderr } = await checkPolicies(...args);
    expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
    expect(lines(stderr)).toEqual([`${message} (memgate policies --help)`]);
  });
});
