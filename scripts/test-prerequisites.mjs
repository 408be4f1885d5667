// @ts-check
// Runs before the tests (npm's pretest): makes sure what they run for real is here. Missing
// system packages are installed when this can (root, with apt-get), else it stops at once
// with one line naming the command that installs them. Plain Node with no dependency, so it
// also runs in a clone whose npm dependencies are not installed yet, and says so.
import { spawnSync } from 'node:child_process';
import console from 'node:console';
import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath, URL } from 'node:url';

/**
 * Something the integration tests run, and where they look for it: at `path` unless the
 * environment `variable` names another file, or as `command` on PATH.
 * @typedef {object} SystemNeed
 * @property {string} package the Debian package that installs it
 * @property {string} purpose which tests need it
 * @property {string} [variable]
 * @property {string} [path]
 * @property {string} [command]
 */

/** @type {readonly SystemNeed[]} */
export const SYSTEM_NEEDS = [
  // MEMCACHED_SERVERS does not stand in for it: some tests stop, pause and restart their own server.
  { package: 'memcached', purpose: 'the store tests', command: 'memcached' },
  { package: 'nginx', purpose: 'the gateway test', variable: 'NGINX_PATH', path: '/usr/sbin/nginx' },
  {
    package: 'openssl',
    purpose: 'the TLS tests (a certificate authority, server and client certificates)',
    command: 'openssl',
  },
  {
    package: 'sasl2-bin',
    purpose: 'the SASL test (saslpasswd2 makes the password file of memcached -S)',
    variable: 'SASLPASSWD2_PATH',
    path: '/usr/sbin/saslpasswd2',
  },
  {
    package: 'chromium',
    purpose: 'the browser tests of /docs and /dashboard',
    variable: 'CHROMIUM_PATH',
    path: '/usr/bin/chromium',
  },
  {
    package: 'libfaketime',
    purpose: 'the test of skewed clocks',
    variable: 'LIBFAKETIME_PATH',
    path: '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
  },
  {
    package: 'graphite-carbon',
    purpose: 'the Graphite test',
    variable: 'CARBON_CACHE_PATH',
    path: '/usr/bin/carbon-cache',
  },
  {
    package: 'graphite-web',
    purpose: 'the Graphite test',
    variable: 'GRAPHITE_WEB_PATH',
    path: '/usr/lib/python3/dist-packages/graphite/settings.py',
  },
  {
    package: 'python3-django',
    purpose: 'the Graphite test (graphite-web under django-admin)',
    variable: 'DJANGO_ADMIN_PATH',
    path: '/usr/bin/django-admin',
  },
];

/** Where a command is looked for besides PATH, as test/helpers and scripts/lib do. */
const USUAL_DIRS = ['/usr/bin', '/usr/sbin', '/usr/local/bin'];

/**
 * @typedef {object} Machine
 * @property {Readonly<Record<string, string | undefined>>} env
 * @property {(path: string) => boolean} exists whether a file is there
 * @property {(path: string) => boolean} executable whether a program is there
 * @property {boolean} isRoot
 * @property {boolean} hasApt
 * @property {boolean} hasNodeModules whether `npm ci` has run
 */

/**
 * What to do before the tests on this machine.
 * @param {Machine} machine
 * @returns {{ kind: 'ready' } | { kind: 'install', needs: SystemNeed[] } | { kind: 'stop', message: string }}
 */
export function prerequisitesPlan(machine) {
  if (!machine.hasNodeModules)
    return { kind: 'stop', message: 'memgate tests: the npm dependencies are not installed; run: npm ci' };
  const wrongPaths = SYSTEM_NEEDS.filter(
    ({ variable }) => variable && machine.env[variable] && !machine.exists(machine.env[variable]),
  );
  if (wrongPaths.length > 0) {
    const named = wrongPaths.map(
      ({ variable, package: name }) => `${variable ?? ''}=${machine.env[variable ?? ''] ?? ''} is not a file (${name})`,
    );
    return { kind: 'stop', message: `memgate tests: ${named.join('; ')}: point it at the file or unset it` };
  }
  const needs = SYSTEM_NEEDS.filter((need) => !isPresent(need, machine));
  if (needs.length === 0) return { kind: 'ready' };
  if (machine.isRoot && machine.hasApt) return { kind: 'install', needs };
  const packages = needs.map((need) => need.package).join(' ');
  const command = machine.hasApt
    ? `sudo apt-get install -y ${packages}`
    : `install ${packages} (Debian: apt-get install -y ${packages})`;
  return { kind: 'stop', message: `memgate tests need ${needs.map(describe).join(', ')}; run: ${command}` };
}

/**
 * @param {SystemNeed} need
 * @param {Machine} machine
 */
function isPresent(need, machine) {
  const fromEnv = need.variable ? machine.env[need.variable] : undefined;
  if (fromEnv) return machine.exists(fromEnv);
  if (need.path) return machine.exists(need.path);
  const dirs = [...(machine.env.PATH ?? '').split(delimiter).filter(Boolean), ...USUAL_DIRS];
  return dirs.some((dir) => machine.executable(join(dir, need.command ?? need.package)));
}

/** @param {SystemNeed} need */
function describe(need) {
  return `${need.package} (${need.purpose})`;
}

/** @param {string} path */
function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** @returns {Machine} */
function thisMachine() {
  const root = fileURLToPath(new URL('..', import.meta.url));
  return {
    env: process.env,
    exists: existsSync,
    executable,
    isRoot: process.getuid?.() === 0,
    hasApt: USUAL_DIRS.some((dir) => executable(join(dir, 'apt-get'))),
    hasNodeModules: existsSync(join(root, 'node_modules', '.bin', 'vitest')),
  };
}

/**
 * @param {string} command
 * @param {string[]} args
 */
function run(command, args) {
  const { status } = spawnSync(command, args, {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  return status === 0;
}

function main() {
  const machine = thisMachine();
  const plan = prerequisitesPlan(machine);
  if (plan.kind === 'stop') {
    console.error(plan.message);
    process.exit(1);
  }
  if (plan.kind === 'ready') return;
  const packages = plan.needs.map((need) => need.package);
  console.log(`memgate tests: installing ${plan.needs.map(describe).join(', ')} with apt-get`);
  // A fresh Debian has no package lists yet.
  if (!run('apt-get', ['update']) || !run('apt-get', ['install', '-y', ...packages])) {
    console.error(
      `memgate tests: apt-get could not install ${packages.join(' ')}; run: apt-get update && apt-get install -y ${packages.join(' ')}`,
    );
    process.exit(1);
  }
  const after = prerequisitesPlan(machine);
  if (after.kind !== 'ready') {
    console.error(
      after.kind === 'stop'
        ? after.message
        : `memgate tests: still missing after apt-get: ${after.needs.map(describe).join(', ')}`,
    );
    process.exit(1);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
