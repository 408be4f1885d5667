// What each package of this repository costs an app that installs it: packed from this
// checkout (each through its prepack), installed alone into a fresh app from the registry,
// then counted: packages, bytes of their files, native modules. docs/performance.md quotes
// its table; test/packages.test.ts holds memgate-limiter to 10 packages and 5 MB.
// Usage: npm run install-size
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = new URL('../', import.meta.url).pathname;
const PACKAGES = [
  { name: 'memgate-limiter', folder: './packages/limiter' },
  { name: 'memgate-client', folder: './packages/client' },
  { name: 'memgate', folder: '.' },
];

function files(folder: string): { path: string; bytes: number }[] {
  return readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => {
      const path = join(entry.parentPath, entry.name);
      return { path, bytes: statSync(path).size };
    });
}

const mb = (bytes: number) => (bytes / 1_000_000).toFixed(2);

const work = mkdtempSync(join(tmpdir(), 'memgate-install-size-'));
try {
  const rows: string[] = [];
  for (const { name, folder } of PACKAGES) {
    process.stderr.write(`packing and installing ${name}…\n`);
    const { stdout } = await run('npm', ['pack', folder, '--json', '--pack-destination', work], { cwd: ROOT });
    const [packed] = JSON.parse(stdout) as [{ filename: string; size: number }];
    const app = join(work, `${name}-app`);
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }));
    await run('npm', ['install', '--no-audit', '--no-fund', join(work, packed.filename)], { cwd: app });
    const modules = join(app, 'node_modules');
    const lock = JSON.parse(readFileSync(join(modules, '.package-lock.json'), 'utf8')) as {
      packages: Record<string, { hasInstallScript?: boolean }>;
    };
    const installed = Object.keys(lock.packages);
    const all = files(modules);
    const own = all.filter(({ path }) => path.startsWith(join(modules, name) + '/'));
    const native = all.filter(({ path }) => path.endsWith('.node')).length;
    const scripts = Object.values(lock.packages).filter((entry) => entry.hasInstallScript).length;
    const total = all.reduce((sum, file) => sum + file.bytes, 0);
    const itself = own.reduce((sum, file) => sum + file.bytes, 0);
    rows.push(
      `| ${name} | ${installed.length} | ${mb(total)} | ${mb(itself)} | ${mb(packed.size)} | ${native} | ${scripts} |`,
    );
  }
  console.log(
    '| package | packages in the app | MB in the app | of which itself, MB | tarball, MB | native modules | install scripts |',
  );
  console.log('| :-- | --: | --: | --: | --: | --: | --: |');
  for (const row of rows) console.log(row);
} finally {
  rmSync(work, { recursive: true, force: true });
}
