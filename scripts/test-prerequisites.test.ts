import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { prerequisitesPlan, SYSTEM_NEEDS } from './test-prerequisites.mjs';

const run = promisify(execFile);

/** A machine with these files, as root with apt-get unless told otherwise. */
function machine(
  files: string[],
  overrides: { env?: Record<string, string>; isRoot?: boolean; hasApt?: boolean; hasNodeModules?: boolean } = {},
) {
  const present = new Set(files);
  return {
    env: { PATH: '/opt/bin', ...overrides.env },
    exists: (path: string) => present.has(path),
    executable: (path: string) => present.has(path),
    isRoot: overrides.isRoot ?? true,
    hasApt: overrides.hasApt ?? true,
    hasNodeModules: overrides.hasNodeModules ?? true,
  };
}

const EVERYTHING = [
  '/usr/bin/memcached',
  '/usr/bin/openssl',
  '/usr/sbin/nginx',
  '/usr/sbin/saslpasswd2',
  '/usr/bin/chromium',
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/bin/carbon-cache',
  '/usr/lib/python3/dist-packages/graphite/settings.py',
  '/usr/bin/django-admin',
];

describe('test prerequisites', () => {
  it('are ready when every package is where the tests look', () => {
    expect(prerequisitesPlan(machine(EVERYTHING))).toEqual({ kind: 'ready' });
    // memcached anywhere on PATH will do.
    expect(prerequisitesPlan(machine(['/opt/bin/memcached', ...EVERYTHING.slice(1)]))).toEqual({ kind: 'ready' });
  });

  it('take the paths the tests honour from the environment instead', () => {
    const env = {
      CHROMIUM_PATH: '/opt/chrome',
      NGINX_PATH: '/opt/nginx',
      SASLPASSWD2_PATH: '/opt/saslpasswd2',
      LIBFAKETIME_PATH: '/opt/faketime.so',
      CARBON_CACHE_PATH: '/opt/carbon-cache',
      GRAPHITE_WEB_PATH: '/opt/graphite/settings.py',
      DJANGO_ADMIN_PATH: '/opt/django-admin',
    };
    expect(
      prerequisitesPlan(machine(['/usr/bin/memcached', '/usr/bin/openssl', ...Object.values(env)], { env })),
    ).toEqual({
      kind: 'ready',
    });
  });

  it('installs what is missing as root with apt-get, in one go', () => {
    const plan = prerequisitesPlan(machine(['/usr/sbin/nginx', '/usr/bin/django-admin']));
    expect(plan.kind === 'install' && plan.needs.map((need) => need.package)).toEqual([
      'memcached',
      'openssl',
      'sasl2-bin',
      'chromium',
      'libfaketime',
      'graphite-carbon',
      'graphite-web',
    ]);
  });

  it('otherwise stops with one line naming the command that installs it', () => {
    const plan = prerequisitesPlan(
      machine(
        EVERYTHING.filter((path) => !path.includes('chromium') && !path.includes('memcached')),
        { isRoot: false },
      ),
    );
    expect(plan).toEqual({
      kind: 'stop',
      message:
        'memgate tests need memcached (the store tests), chromium (the browser tests of /docs and /dashboard); run: sudo apt-get install -y memcached chromium',
    });
    const elsewhere = prerequisitesPlan(machine([], { hasApt: false }));
    expect(elsewhere.kind === 'stop' && elsewhere.message).toMatch(
      /; run: install memcached nginx openssl sasl2-bin chromium libfaketime graphite-carbon graphite-web python3-django \(Debian: apt-get install -y memcached nginx openssl sasl2-bin chromium libfaketime graphite-carbon graphite-web python3-django\)$/,
    );
  });

  it('stops, installing nothing, when a path from the environment is wrong', () => {
    const plan = prerequisitesPlan(machine(EVERYTHING, { env: { NGINX_PATH: '/opt/no-nginx' } }));
    expect(plan).toEqual({
      kind: 'stop',
      message: 'memgate tests: NGINX_PATH=/opt/no-nginx is not a file (nginx): point it at the file or unset it',
    });
  });

  it('names npm ci in a clone whose dependencies are not installed', () => {
    expect(prerequisitesPlan(machine(EVERYTHING, { hasNodeModules: false }))).toEqual({
      kind: 'stop',
      message: 'memgate tests: the npm dependencies are not installed; run: npm ci',
    });
  });

  it('looks where the tests look', () => {
    expect(SYSTEM_NEEDS.map(({ package: name, variable, path }) => [name, variable, path])).toEqual([
      ['memcached', undefined, undefined],
      ['nginx', 'NGINX_PATH', '/usr/sbin/nginx'],
      ['openssl', undefined, undefined],
      ['sasl2-bin', 'SASLPASSWD2_PATH', '/usr/sbin/saslpasswd2'],
      ['chromium', 'CHROMIUM_PATH', '/usr/bin/chromium'],
      ['libfaketime', 'LIBFAKETIME_PATH', '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1'],
      ['graphite-carbon', 'CARBON_CACHE_PATH', '/usr/bin/carbon-cache'],
      ['graphite-web', 'GRAPHITE_WEB_PATH', '/usr/lib/python3/dist-packages/graphite/settings.py'],
      ['python3-django', 'DJANGO_ADMIN_PATH', '/usr/bin/django-admin'],
    ]);
  });

  it('as a command, exits 1 with its one line and installs nothing when it must stop', async () => {
    const failure = run(process.execPath, ['scripts/test-prerequisites.mjs'], {
      env: { ...process.env, CHROMIUM_PATH: '/nonexistent/chromium' },
    });
    await expect(failure).rejects.toMatchObject({
      code: 1,
      stdout: '',
      stderr:
        'memgate tests: CHROMIUM_PATH=/nonexistent/chromium is not a file (chromium): point it at the file or unset it\n',
    });
  });
});
