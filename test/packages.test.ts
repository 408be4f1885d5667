// Both packages as an app meets them (issue 25): packed, installed from their tarballs into
// fresh apps with only the registry, type-checked with strict tsc under moduleResolution
// node16, nodenext and bundler, and run from ESM and from CommonJS against a real memgate:
// the installed package's own `memgate` command.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runBeside, stopBeside } from './helpers/beside.js';
import { startServiceProcess, type ServiceProcess } from './helpers/service-process.js';

const run = promisify(execFile);
const ROOT = new URL('../', import.meta.url).pathname;
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

interface Packed {
  readonly filename: string;
  readonly files: readonly { readonly path: string }[];
}

/**
 * `npm pack` of the root or of a package folder as the run's one build left them (the shared
 * setup's `npm run build`, which is what each prepack runs after emptying dist/): packing
 * through prepack would empty dist/ under the other test files of the run. "the tarballs"
 * below then holds every packed output to a source of today's checkout.
 */
async function pack(destination: string, folder?: string): Promise<Packed> {
  const args = ['pack', ...(folder ? [folder] : []), '--json', '--pack-destination', destination, '--ignore-scripts'];
  const { stdout } = await runBeside('npm', args, { cwd: ROOT });
  const [packed] = JSON.parse(stdout) as [Packed];
  return { ...packed, filename: join(destination, packed.filename) };
}

/** The version this checkout's lockfile installed, so the apps get what the repository tests. */
function installedVersion(name: string): string {
  return (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string })
    .version;
}

async function npmInstall(app: string, specs: readonly string[]): Promise<void> {
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }));
  await runBeside('npm', ['install', '--no-audit', '--no-fund', '--no-save', ...specs], { cwd: app });
}

/** Every package under the app's node_modules, as npm recorded the install. */
function installedPackages(app: string): string[] {
  const lock = JSON.parse(readFileSync(join(app, 'node_modules/.package-lock.json'), 'utf8')) as {
    packages: Record<string, unknown>;
  };
  return Object.keys(lock.packages)
    .map((path) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length))
    .sort();
}

const SERVER_SIDE = ['fastify', 'memjs', 'libsql', '@grpc/grpc-js', '@grpc/proto-loader', 'pino', 'prom-client'];

// A client's program: five checks of login (5 a minute in the bundled policy file) pass, the sixth is refused.
// Its timeout is long so that the service decides every check on a loaded machine, not the client.
const CLIENT_ONLY_ESM = `
import { createClient } from 'memgate-client';
const client = createClient({ url: process.env.MEMGATE_URL, timeoutMs: 60000 });
const answers = [];
for (let i = 0; i < 6; i++) answers.push((await client.check('login', process.env.TAG)).allowed);
await client.close();
console.log(JSON.stringify(answers));
`;
const CLIENT_ONLY_CJS = `
const { createClient } = require('memgate-client');
(async () => {
  const client = createClient({ url: process.env.MEMGATE_URL, timeoutMs: 60000 });
  const answers = [];
  for (let i = 0; i < 6; i++) answers.push((await client.check('login', process.env.TAG)).allowed);
  await client.close();
  console.log(JSON.stringify(answers));
})();
`;

// Every entry of both packages, in one TypeScript program written once and compiled as an ES
// module (.mts) and as CommonJS (.cts). Each guard sees login's limit of 5 a minute.
const EVERY_ENTRY = `
import { createEmbeddedStore, createLimiter, type Decision } from 'memgate';
import { createClient, type ClientDecision } from 'memgate-client';
import { createClient as createServiceClient } from 'memgate/client';
import { MemgateStore } from 'memgate-client/express-rate-limit';
import { MemgateStore as ServiceMemgateStore } from 'memgate/express-rate-limit';
import { memgateStore } from 'memgate-client/fastify-rate-limit';
import { memgateStore as serviceMemgateStore } from 'memgate/fastify-rate-limit';
import { memgateLimit } from 'memgate-client/express';
import { memgateLimit as serviceMemgateLimit } from 'memgate/express';
import { memgatePlugin } from 'memgate-client/fastify';
import { memgatePlugin as serviceMemgatePlugin } from 'memgate/fastify';
import express from 'express';
import { rateLimit } from 'express-rate-limit';
import Fastify, { type FastifyInstance } from 'fastify';
import fastifyRateLimit from '@fastify/rate-limit';
import type { AddressInfo } from 'node:net';

const url: string = process.env.MEMGATE_URL ?? '';
const tag: string = process.env.TAG ?? '';
// The service decides every check, however loaded the machine: a client's default 500 ms would
// let it answer for the service (allowed, degraded) and the sixth would pass.
const timeoutMs = 60_000;

async function sixTimes(ask: () => Promise<number | boolean>): Promise<(number | boolean)[]> {
  const answers: (number | boolean)[] = [];
  for (let i = 0; i < 6; i++) answers.push(await ask());
  return answers;
}

async function injected(app: FastifyInstance): Promise<(number | boolean)[]> {
  app.get('/', async () => 'ok');
  await app.ready();
  const answers = await sixTimes(async () => (await app.inject('/')).statusCode);
  await app.close();
  return answers;
}

async function main(): Promise<void> {
  const result: Record<string, (number | boolean)[]> = {};

  const limiter = createLimiter({
    policies: { events: { login: { limits: [{ limit: 5, window: '1m' }] } } },
    store: createEmbeddedStore(),
  });
  result['memgate'] = await sixTimes(async () => {
    const decision: Decision = await limiter.check({ event: 'login', feature: tag });
    return decision.allowed;
  });
  await limiter.close();

  for (const [name, make] of [['memgate-client', createClient], ['memgate/client', createServiceClient]] as const) {
    const client = make({ url, timeoutMs });
    result[name] = await sixTimes(async () => {
      const decision: ClientDecision = await client.check('login', name + tag);
      return decision.allowed;
    });
    await client.close();
  }

  const client = createClient({ url, timeoutMs });
  const app = express();
  const ok = (_request: express.Request, response: express.Response) => {
    response.send('ok');
  };
  app.get('/memgate-client/express', memgateLimit({ client, event: 'login', feature: () => 'mw' + tag }), ok);
  app.get('/memgate/express', serviceMemgateLimit({ client, event: 'login', feature: () => 'smw' + tag }), ok);
  for (const [path, store] of [
    ['/memgate-client/express-rate-limit', new MemgateStore({ client, event: 'login' })],
    ['/memgate/express-rate-limit', new ServiceMemgateStore({ client, event: 'login' })],
  ] as const) {
    app.get(path, rateLimit({ windowMs: 60_000, limit: 5, keyGenerator: () => path + tag, store }), ok);
  }
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const base = 'http://127.0.0.1:' + String((server.address() as AddressInfo).port);
  for (const path of ['/memgate-client/express', '/memgate/express', '/memgate-client/express-rate-limit', '/memgate/express-rate-limit']) {
    result[path.slice(1)] = await sixTimes(async () => (await fetch(base + path)).status);
  }
  await new Promise((resolve) => server.close(resolve));

  for (const [name, plugin] of [['memgate-client/fastify', memgatePlugin], ['memgate/fastify', serviceMemgatePlugin]] as const) {
    const guarded = Fastify();
    await guarded.register(plugin, { client, event: 'login', feature: () => name + tag });
    result[name] = await injected(guarded);
  }
  for (const [name, store] of [
    ['memgate-client/fastify-rate-limit', memgateStore({ client, event: 'login' })],
    ['memgate/fastify-rate-limit', serviceMemgateStore({ client, event: 'login' })],
  ] as const) {
    const guarded = Fastify();
    await guarded.register(fastifyRateLimit, { max: 5, timeWindow: 60_000, keyGenerator: () => name + tag, store });
    result[name] = await injected(guarded);
  }
  await client.close();
  console.log(JSON.stringify(result));
}

void main();
`;

const ENTRIES = [
  'memgate',
  'memgate-client',
  'memgate/client',
  'memgate-client/express',
  'memgate/express',
  'memgate-client/express-rate-limit',
  'memgate/express-rate-limit',
  'memgate-client/fastify',
  'memgate/fastify',
  'memgate-client/fastify-rate-limit',
  'memgate/fastify-rate-limit',
];

/**
 * The README's library example (the first TypeScript block under "## As a library"), as an app
 * would write it. The client it counts is made the run's own, since the run's memcached is shared.
 */
function readmeLibraryExample(client: string): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## As a library\n'));
  const example = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (!example?.includes("from 'memgate-limiter'"))
    throw new Error(
      "README.md's library example (a ts block under ## As a library, importing memgate-limiter) is missing",
    );
  return example.replaceAll("'203.0.113.7'", JSON.stringify(client));
}

/** The example as CommonJS: its imports stay on top (compiled to require), the rest runs in an async function. */
function asCommonJs(example: string): string {
  const lines = example.split('\n');
  const body = lines.filter((line) => !line.startsWith('import '));
  return [...lines.filter((line) => line.startsWith('import ')), 'void (async () => {', ...body, '})();'].join('\n');
}

/** What an app's node_modules weighs: the bytes of its files (not the disk blocks they take). */
function bytesUnder(folder: string): number {
  return readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .reduce((sum, entry) => sum + statSync(join(entry.parentPath, entry.name)).size, 0);
}

let folder: string;
let memgateTarball: Packed;
let clientTarball: Packed;
let limiterTarball: Packed;
let limiterApp: string;
let clientApp: string;
let fullApp: string;
let memgate: ServiceProcess;
let installedFromGit: Promise<string>;

/** `npm install git+file://<this checkout>#<HEAD>` into a new app, as from a git host; resolves to the app. */
async function installFromGit(app: string): Promise<string> {
  // The commit checked out: what `npm install git+https://…/memgate.git` would fetch.
  const { stdout: commit } = await run('git', ['rev-parse', 'HEAD'], { cwd: ROOT });
  mkdirSync(app);
  await npmInstall(app, [`git+file://${ROOT}#${commit.trim()}`]);
  return app;
}

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'memgate-packages-'));
  // The install from git (its own clone, its dependencies, its build) is the longest step: it
  // runs beside the others, and its test waits for it.
  installedFromGit = installFromGit(join(folder, 'git-app'));
  installedFromGit.catch(() => undefined);
  [memgateTarball, clientTarball, limiterTarball] = await Promise.all([
    pack(folder),
    pack(folder, './packages/client'),
    pack(folder, './packages/limiter'),
  ]);

  clientApp = join(folder, 'client-app');
  limiterApp = join(folder, 'limiter-app');
  fullApp = join(folder, 'full-app');
  mkdirSync(clientApp);
  mkdirSync(limiterApp);
  mkdirSync(fullApp);
  await Promise.all([
    npmInstall(clientApp, [clientTarball.filename]),
    npmInstall(limiterApp, [limiterTarball.filename, `@types/node@${installedVersion('@types/node')}`]),
    npmInstall(fullApp, [
      memgateTarball.filename,
      clientTarball.filename,
      ...['express', '@types/express', 'express-rate-limit', 'fastify', '@fastify/rate-limit', '@types/node'].map(
        (name) => `${name}@${installedVersion(name)}`,
      ),
    ]),
  ]);
  // The installed package's command, with its bundled policy file, on the run's memcached.
  memgate = await startServiceProcess({ MEMCACHED_SERVERS: inject('sharedMemcached') }, [], {
    command: [join(fullApp, 'node_modules/.bin/memgate')],
    cwd: fullApp,
  });
});

afterAll(async () => {
  stopBeside();
  await memgate.stop();
  rmSync(folder, { recursive: true, force: true });
});

/**
 * Strict tsc over `files` in the app `cwd` (libraries' types checked too), with `settings`
 * (module, resolution, emit): what it complains of, '' when nothing. Each run loads the
 * app's types anew, seconds of CPU, so the tests compile each program once.
 */
async function strictTsc(cwd: string, files: readonly string[], settings: readonly string[]): Promise<string> {
  const strict = ['--strict', '--skipLibCheck', 'false', '--target', 'es2022', '--types', 'node'];
  const checked = await runBeside(process.execPath, [TSC, ...strict, ...settings, ...files], { cwd }).catch(
    (error: unknown) => error as { stdout: string; stderr: string; code: number },
  );
  // A tsc that failed without a word (killed, or crashed on stderr) fails the check too.
  return 'code' in checked ? checked.stdout || checked.stderr || `tsc exited with ${String(checked.code)}` : '';
}

/** The sources under src/ the build of `tsconfig` compiles today, as `src/…` paths (tsc --listFilesOnly). */
async function builtSources(tsconfig: string): Promise<Set<string>> {
  const { stdout } = await runBeside(process.execPath, [TSC, '-p', tsconfig, '--listFilesOnly'], { cwd: ROOT });
  const src = join(ROOT, 'src/');
  return new Set(
    stdout
      .split('\n')
      .filter((file) => file.startsWith(src))
      .map((file) => `src/${file.slice(src.length)}`),
  );
}

/** The source under src/ an output under dist/ (or dist/cjs-types/) was built from. */
function sourceOf(output: string): string {
  return output.replace(/^dist\/(cjs-types\/)?/, 'src/').replace(/\.(js|js\.map|d\.ts)$/, '.ts');
}

describe('the tarballs', () => {
  const MEMGATE_FILES = [
    /^(package\.json|README\.md|LICENSE)$/,
    /^dist\/[a-z/-]+\.(js|js\.map|d\.ts)$/,
    /^dist\/cjs-types\/([a-z/-]+\.d\.ts|package\.json)$/,
    /^proto\/[a-z0-9/_]+\.proto$/,
    /^dashboard\/[a-z]+\.(html|js|css|svg)$/,
    /^config\/policies\.yaml$/,
    /^docs\/[a-z]+\.md$/,
    /^docs\/images\/[a-z-]+\.png$/,
  ];
  const LIMITER_FILES = [
    /^(package\.json|README\.md|LICENSE)$/,
    /^dist\/(library\.(js|d\.ts)|(config|counting|store|shared)\/[a-z/-]+\.(js|d\.ts))$/,
    /^dist\/cjs-types\/([a-z/-]+\.d\.ts|package\.json)$/,
  ];
  const CLIENT_FILES = [
    /^(package\.json|README\.md|LICENSE)$/,
    /^dist\/(client|integrations|shared)\/[a-z-]+\.(js|js\.map|d\.ts)$/,
    /^dist\/cjs-types\/((client|integrations|shared)\/[a-z-]+\.d\.ts|package\.json)$/,
  ];

  it.each([
    [
      'memgate',
      () => memgateTarball,
      MEMGATE_FILES,
      ['dist/main.js', 'dist/index.d.ts', 'config/policies.yaml'],
      'tsconfig.build.json',
    ],
    [
      'memgate-client',
      () => clientTarball,
      CLIENT_FILES,
      ['dist/client/index.js', 'dist/integrations/express.d.ts'],
      'packages/client/tsconfig.build.json',
    ],
    [
      'memgate-limiter',
      () => limiterTarball,
      LIMITER_FILES,
      ['dist/library.js', 'dist/cjs-types/library.d.ts'],
      'packages/limiter/tsconfig.build.json',
    ],
  ])(
    '%s carries its build, maps and licence, and no test, fixture or stale output',
    async (_name, tarball, allowed, needed, tsconfig) => {
      const paths = tarball().files.map((file) => file.path);
      expect(paths.filter((path) => !allowed.some((pattern) => pattern.test(path)))).toEqual([]);
      expect(paths.filter((path) => /\.test\.|tsbuildinfo|fixture/.test(path))).toEqual([]);
      for (const path of [...needed, 'LICENSE', 'README.md']) expect(paths).toContain(path);
      // Every output (module, map, types) was built from a source its build compiles today: none
      // of a module since removed, or since left out of the package's imports, which a dist/
      // built before would still hold (a prepack's clean build would not).
      const sources = await builtSources(tsconfig);
      const stale = paths
        .filter((path) => /^dist\/.+\.(js|js\.map|d\.ts)$/.test(path))
        .filter((path) => !sources.has(sourceOf(path)));
      expect(stale, 'outputs of sources no longer built: rm -rf dist packages/*/dist, and run the tests again').toEqual(
        [],
      );
    },
  );

  it('maps hold their sources, since neither tarball carries src/', () => {
    const map = JSON.parse(
      readFileSync(join(fullApp, 'node_modules/memgate-client/dist/client/client.js.map'), 'utf8'),
    ) as { sourcesContent?: string[] };
    expect(map.sourcesContent?.[0]).toContain('export function createClient');
  });
});

describe('memgate installed from git', () => {
  it('builds on install (prepare) and serves its command and entries', async () => {
    const app = await installedFromGit;
    const version = await run(join(app, 'node_modules/.bin/memgate'), ['--version'], { cwd: app });
    const { version: expected } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(version.stdout.trim()).toBe(`memgate ${expected}`);
    const entries = await run(
      process.execPath,
      ['-e', "console.log(typeof require('memgate').createLimiter, typeof require('memgate/client').createClient)"],
      { cwd: app },
    );
    expect(entries.stdout.trim()).toBe('function function');
  });
});

describe('memgate-limiter installed alone', () => {
  // Issue 40: the library in an app costs at most 10 packages and 5 MB, with no native module.
  it('brings at most 10 packages and 5 MB, no server and nothing native', () => {
    const installed = installedPackages(limiterApp).filter(
      (name) => !name.startsWith('@types/') && name !== 'undici-types',
    );
    expect(installed).toContain('memgate-limiter');
    expect(installed.length).toBeLessThanOrEqual(10);
    expect(installed.filter((name) => SERVER_SIDE.includes(name) || name.startsWith('@opentelemetry/'))).toEqual([]);
    const modules = join(limiterApp, 'node_modules');
    const types = ['@types', 'undici-types'].reduce((sum, name) => sum + bytesUnder(join(modules, name)), 0);
    expect(bytesUnder(modules) - types).toBeLessThanOrEqual(5_000_000);
    const lock = JSON.parse(readFileSync(join(modules, '.package-lock.json'), 'utf8')) as {
      packages: Record<string, { hasInstallScript?: boolean }>;
    };
    expect(
      Object.entries(lock.packages)
        .filter(([, entry]) => entry.hasInstallScript)
        .map(([path]) => path),
    ).toEqual([]);
    const native = readdirSync(modules, { recursive: true }).filter((path) =>
      /\.node$|binding\.gyp$/.test(String(path)),
    );
    expect(native).toEqual([]);
  });

  /** The README's example as each kind of module: its source, what tsc builds of it, and how it is written. */
  const EXAMPLES = [
    ['ESM', 'example.mts', 'example.mjs', (text: string) => text],
    ['CommonJS', 'example.cts', 'example.cjs', asCommonJs],
  ] as const;
  let compiledExamples: Promise<string> | undefined;
  /** Both kinds written and compiled by one strict tsc run, once: what it complains of. */
  const compileExamples = () =>
    (compiledExamples ??= (async () => {
      const stamp = String(Date.now() % 250);
      for (const [, source, built, shape] of EXAMPLES)
        writeFileSync(join(limiterApp, source), shape(readmeLibraryExample(`198.51.100.${stamp}-${built}`)));
      return strictTsc(
        limiterApp,
        EXAMPLES.map(([, source]) => source),
        ['--module', 'node16'],
      );
    })());

  it.each(EXAMPLES)(
    "runs the README's library example from %s with strict types, on a real memcached",
    async (_kind, _source, built) => {
      expect(await compileExamples()).toBe('');
      const { stdout, stderr } = await run(process.execPath, [built], {
        cwd: limiterApp,
        env: { PATH: process.env.PATH, MEMCACHED_SERVERS: inject('sharedMemcached') },
      });
      // The example's own line: allowed, 4 of login's 5 a minute left. No outage was warned of.
      expect({ stdout: stdout.trim(), stderr }).toEqual({ stdout: 'true 4', stderr: '' });
    },
  );
});

describe('memgate-client installed alone', () => {
  it('brings no server dependency: only itself, lru-cache and p-limit', () => {
    const installed = installedPackages(clientApp);
    expect(installed).toEqual(['lru-cache', 'memgate-client', 'p-limit', 'yocto-queue']);
    expect(installed.filter((name) => SERVER_SIDE.includes(name) || name === 'undici')).toEqual([]);
  });

  it.each([
    ['ESM', 'program.mjs', CLIENT_ONLY_ESM],
    ['CommonJS', 'program.cjs', CLIENT_ONLY_CJS],
  ])('checks a real memgate from %s, through fetch as undici is not there', async (_kind, file, text) => {
    writeFileSync(join(clientApp, file), text);
    const { stdout } = await run(process.execPath, [file], {
      cwd: clientApp,
      env: { PATH: process.env.PATH, MEMGATE_URL: memgate.url, TAG: `alone-${file}-${Date.now()}` },
    });
    expect(JSON.parse(stdout)).toEqual([true, true, true, true, true, false]);
  });
});

describe('both packages in an app with the frameworks', () => {
  it.each(ENTRIES)('%s loads with require()', async (entry) => {
    const { stdout } = await run(
      process.execPath,
      ['-e', `console.log(JSON.stringify(Object.keys(require(${JSON.stringify(entry)}))))`],
      { cwd: fullApp },
    );
    expect((JSON.parse(stdout) as string[]).length).toBeGreaterThan(0);
  });

  const SETTINGS = [
    ['node16', ['--module', 'node16', '--moduleResolution', 'node16']],
    ['nodenext', ['--module', 'nodenext', '--moduleResolution', 'nodenext', '--noEmit']],
    ['bundler', ['--module', 'preserve', '--moduleResolution', 'bundler', '--noEmit']],
  ] as const;

  /**
   * Each resolution's check of the program as ESM and as CommonJS, run once: what it complains
   * of. node16's also emits program.mjs and program.cjs, which the run tests below run.
   */
  const checks = new Map<string, Promise<string>>();
  const checkProgram = (name: string, settings: readonly string[]) => {
    let check = checks.get(name);
    if (!check) {
      writeFileSync(join(fullApp, 'program.mts'), EVERY_ENTRY);
      writeFileSync(join(fullApp, 'program.cts'), EVERY_ENTRY);
      check = strictTsc(fullApp, ['program.mts', 'program.cts'], settings);
      checks.set(name, check);
    }
    return check;
  };

  it.each(SETTINGS)(
    'a program using every entry type-checks as ESM and as CommonJS under moduleResolution %s',
    async (name, settings) => {
      expect(await checkProgram(name, settings)).toBe('');
    },
  );

  it.each([
    ['ESM', 'program.mjs'],
    ['CommonJS', 'program.cjs'],
  ])('the program runs from %s against a real memgate: five pass, the sixth is refused', async (_kind, built) => {
    const [name, settings] = SETTINGS[0];
    expect(await checkProgram(name, settings)).toBe('');
    const { stdout } = await run(process.execPath, [built], {
      cwd: fullApp,
      env: { PATH: process.env.PATH, MEMGATE_URL: memgate.url, TAG: `${built}-${Date.now()}` },
    });
    const result = JSON.parse(stdout) as Record<string, unknown[]>;
    expect(Object.keys(result).sort()).toEqual([...ENTRIES].sort());
    for (const [entry, answers] of Object.entries(result)) {
      const pass = typeof answers[0] === 'boolean' ? true : 200;
      const refuse = typeof answers[0] === 'boolean' ? false : 429;
      expect({ entry, answers }).toEqual({ entry, answers: [pass, pass, pass, pass, pass, refuse] });
    }
  });
});
