// What a program imports: a module hook (node:module's register) that writes every ES module
// it resolves to a log file, for tests that hold a program to loading only what it uses.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The environment variable naming the log file the hook appends to. */
const LOG_VARIABLE = 'MODULE_LOG';

export interface ModuleLog {
  /** For node's `--import`: registers the hook in the process it starts in. */
  readonly register: string;
  /** A fresh log for one program, and the environment that points the hook at it. */
  log(name: string): Promise<{ readonly path: string; readonly env: Readonly<Record<string, string>> }>;
  /** Removes the hook and its logs. */
  remove(): Promise<void>;
}

/** Writes the hook into a folder of its own. */
export async function moduleLog(): Promise<ModuleLog> {
  const dir = await mkdtemp(join(tmpdir(), 'memgate-modules-'));
  await writeFile(
    join(dir, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(process.env.${LOG_VARIABLE}, resolved.url + '\\n');
  return resolved;
}\n`,
  );
  const register = join(dir, 'register.mjs');
  await writeFile(register, `import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n`);
  return {
    register,
    async log(name) {
      const path = join(dir, `${name}.log`);
      await writeFile(path, '');
      return { path, env: { [LOG_VARIABLE]: path } };
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** The files a log holds, one URL each. */
export async function loggedFiles(path: string): Promise<string[]> {
  return (await readFile(path, 'utf8')).split('\n').filter(Boolean);
}

/** The packages (as named under node_modules) that `files` come from. */
export function packagesOf(files: readonly string[]): Set<string> {
  return new Set(files.flatMap((file) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1] ?? []));
}
