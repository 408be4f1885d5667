import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { freePort } from '../../scripts/lib/memcached-process.js';
import { IN_CI } from './shared-files.js';

/** Debian's carbon-cache (graphite-carbon). */
const CARBON_CACHE = process.env.CARBON_CACHE_PATH ?? '/usr/bin/carbon-cache';
/** Debian's graphite-web, a Django project run with python3-django's django-admin. */
const GRAPHITE_WEB = process.env.GRAPHITE_WEB_PATH ?? '/usr/lib/python3/dist-packages/graphite/settings.py';
const DJANGO_ADMIN = process.env.DJANGO_ADMIN_PATH ?? '/usr/bin/django-admin';

/** The schemas the example ships: what is tested is what operators are told to use. */
const EXAMPLE_CONFS = ['storage-schemas.conf', 'storage-aggregation.conf'];

/** How long carbon-cache or graphite-web may take to start. */
const START_TIMEOUT_MS = 30_000;

/** A carbon-cache and a graphite-web reading what it writes, on free loopback ports. */
export interface TestGraphite {
  /** Carbon's plaintext receiver. */
  readonly carbon: { readonly host: string; readonly port: number };
  readonly web: URL;
  /** Stops graphite-web only, as when it goes down while carbon still takes writes. */
  stopWeb(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * What this machine lacks to run Graphite, or undefined when it has it all. Missing, the
 * calling test file is skipped with a line saying what to install; under CI=true that
 * throws instead, so a missing package never passes as a test that ran.
 */
export function missingGraphite(): string | undefined {
  const needs = [
    { path: CARBON_CACHE, pkg: 'graphite-carbon', variable: 'CARBON_CACHE_PATH' },
    { path: GRAPHITE_WEB, pkg: 'graphite-web', variable: 'GRAPHITE_WEB_PATH' },
    { path: DJANGO_ADMIN, pkg: 'python3-django', variable: 'DJANGO_ADMIN_PATH' },
  ];
  const missing = needs.filter(({ path }) => !existsSync(path));
  if (missing.length === 0) return undefined;
  const named = missing.map(({ path, pkg, variable }) => `${path} (${pkg}; or set ${variable})`).join(', ');
  const message = `the Graphite test needs ${named}; run: apt-get install -y graphite-carbon graphite-web`;
  if (IN_CI) throw new Error(message);
  process.stderr.write(`skipped: ${message}\n`);
  return message;
}

/**
 * A Graphite for the calling test file, started before its tests and stopped after them.
 * Call the returned function inside tests to reach it.
 */
export function useGraphite(): () => TestGraphite {
  let graphite: TestGraphite | undefined;
  beforeAll(async () => {
    graphite = await startGraphite();
  });
  afterAll(async () => {
    await graphite?.stop();
  });
  return () => {
    if (!graphite) throw new Error('useGraphite(): Graphite is only there while the tests run');
    return graphite;
  };
}

/**
 * carbon-cache and graphite-web, each with a folder of its own in a temporary directory:
 * carbon writes whisper files there with examples/graphite's schemas, and graphite-web
 * reads them, and carbon's cache through CARBONLINK_HOSTS, so a point carbon took is read
 * before it reaches the disk.
 */
export async function startGraphite(): Promise<TestGraphite> {
  // In memory where the host has it: graphite-web's migrations commit (and fsync) one by one,
  // and on a CI disk busy with other tests' installs that took over 30 s instead of 1.
  const dir = await mkdtemp(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'memgate-graphite-'));
  const confDir = join(dir, 'conf');
  const storageDir = join(dir, 'storage');
  const whisperDir = join(storageDir, 'whisper');
  const webDir = join(dir, 'web');
  await Promise.all([confDir, whisperDir, webDir, join(dir, 'log')].map((path) => mkdir(path, { recursive: true })));
  for (const name of EXAMPLE_CONFS) await copyFile(join('examples/graphite', name), join(confDir, name));
  const [linePort, picklePort, queryPort, webPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  await writeFile(
    join(confDir, 'carbon.conf'),
    [
      '[cache]',
      `STORAGE_DIR = ${storageDir}/`,
      `LOCAL_DATA_DIR = ${whisperDir}/`,
      `CONF_DIR = ${confDir}/`,
      `LOG_DIR = ${join(dir, 'log')}/`,
      `PID_DIR = ${dir}/`,
      // Run as whoever runs the tests.
      'USER =',
      'DATABASE = whisper',
      // Every point written at once: a test reads right after it writes.
      'MAX_UPDATES_PER_SECOND = inf',
      // Carbon drops the points of a new metric past this rate: a test makes dozens at once.
      'MAX_CREATES_PER_MINUTE = inf',
      'MAX_CACHE_SIZE = inf',
      'LINE_RECEIVER_INTERFACE = 127.0.0.1',
      `LINE_RECEIVER_PORT = ${linePort}`,
      'PICKLE_RECEIVER_INTERFACE = 127.0.0.1',
      `PICKLE_RECEIVER_PORT = ${picklePort}`,
      'CACHE_QUERY_INTERFACE = 127.0.0.1',
      `CACHE_QUERY_PORT = ${queryPort}`,
      'ENABLE_UDP_LISTENER = False',
      // No tag index (it calls graphite-web) and no carbon.* metrics of its own.
      'ENABLE_TAGS = False',
      'CARBON_METRIC_INTERVAL = 0',
      'LOG_LISTENER_CONN_SUCCESS = False',
      '',
    ].join('\n'),
  );
  // graphite.settings imports the module GRAPHITE_SETTINGS_MODULE names as its local_settings.
  await writeFile(
    join(webDir, 'memgate_graphite_settings.py'),
    [
      "SECRET_KEY = 'memgate-test'",
      `STORAGE_DIR = ${JSON.stringify(storageDir)}`,
      `WHISPER_DIR = ${JSON.stringify(whisperDir)}`,
      `LOG_DIR = ${JSON.stringify(join(dir, 'log'))}`,
      `INDEX_FILE = ${JSON.stringify(join(storageDir, 'index'))}`,
      `CARBONLINK_HOSTS = ['127.0.0.1:${queryPort}']`,
      `DATABASES = {'default': {'NAME': ${JSON.stringify(join(storageDir, 'graphite.db'))}, 'ENGINE': 'django.db.backends.sqlite3'}}`,
      '',
    ].join('\n'),
  );
  const webEnv = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    PYTHONPATH: webDir,
    GRAPHITE_SETTINGS_MODULE: 'memgate_graphite_settings',
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONWARNINGS: 'ignore',
  };
  // graphite-web keeps users and dashboards in its database; /metrics/find needs its tables.
  const migrate = spawnSync(DJANGO_ADMIN, ['migrate', '--settings=graphite.settings'], {
    env: webEnv,
    cwd: dir,
    encoding: 'utf8',
    timeout: START_TIMEOUT_MS,
  });
  if (migrate.status !== 0) {
    await rm(dir, { recursive: true, force: true });
    const how = migrate.error
      ? migrate.error.message
      : `exit ${String(migrate.status)}, signal ${String(migrate.signal)}`;
    throw new Error(`django-admin migrate failed (${how}):\n${migrate.stdout}${migrate.stderr}`);
  }

  let output = '';
  const started = (command: string, args: string[], env: Record<string, string>) => {
    const child = spawn(command, args, { env, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    return child;
  };
  const carbon = started(
    CARBON_CACHE,
    [`--config=${join(confDir, 'carbon.conf')}`, `--pidfile=${join(dir, 'carbon.pid')}`, '--nodaemon', 'start'],
    { PATH: webEnv.PATH, PYTHONDONTWRITEBYTECODE: '1', PYTHONWARNINGS: 'ignore' },
  );
  const web = started(
    DJANGO_ADMIN,
    ['runserver', `127.0.0.1:${webPort}`, '--settings=graphite.settings', '--noreload'],
    webEnv,
  );
  const stopAll = async () => {
    await Promise.all([stopProcess(carbon), stopProcess(web)]);
    await rm(dir, { recursive: true, force: true });
  };
  const webUrl = new URL(`http://127.0.0.1:${webPort}`);
  try {
    await Promise.all([
      waitFor('carbon-cache', carbon, () => accepts(linePort).then(async (ok) => ok && (await accepts(queryPort)))),
      waitFor('graphite-web', web, () =>
        fetch(new URL('/metrics/find?query=memgate', webUrl)).then(
          async (response) => {
            await response.body?.cancel();
            return response.ok;
          },
          () => false,
        ),
      ),
    ]);
  } catch (error) {
    await stopAll();
    throw new Error(`${(error as Error).message}\n${output}`, { cause: error });
  }
  return {
    carbon: { host: '127.0.0.1', port: linePort },
    web: webUrl,
    stopWeb: () => stopProcess(web),
    stop: stopAll,
  };
}

/** Resolves once `ready` answers true; rejects if the process exits first or the time runs out. */
async function waitFor(name: string, child: ChildProcess, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${name} exited (${String(child.exitCode ?? child.signalCode)}) before it was ready`);
    }
    if (await ready()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${name} was not ready within ${START_TIMEOUT_MS} ms`);
}

/** Whether something accepts TCP connections on a loopback port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => {
      resolve(false);
    });
  });
}

/** SIGTERM, then SIGKILL if it is still there after 5 s; resolves once it has exited. */
async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      resolve();
    });
  });
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}
