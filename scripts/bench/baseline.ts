// memgate as built at an older commit, measured beside today's in the same run (an A/B), so
// that a regression shows up as a number. The commit's files come from this clone's history
// (git archive), are built with this checkout's node_modules, and are kept under
// node_modules/.cache, so a second run reuses the build.
import { execFile } from 'node:child_process';
import { access, mkdir, rm, symlink } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A build of another commit: its checkout, whose dist/ holds the service and the library. */
export interface BaselineBuild {
  /** The commit, abbreviated, for reports. */
  readonly commit: string;
  /** Its files, built: `root/dist/main.js`, `root/dist/index.js`. */
  readonly root: string;
}

const CACHE = resolve('node_modules/.cache/memgate-baseline');

/** Builds `ref` (a commit, tag or branch of this clone) once, or finds its build of an earlier run. */
export async function baselineBuild(ref: string): Promise<BaselineBuild> {
  let commit: string;
  try {
    commit = (await run('git', ['rev-parse', '--verify', '--short=12', `${ref}^{commit}`])).stdout.trim();
  } catch {
    throw new Error(
      `no commit ${JSON.stringify(ref)} in this clone's history (a shallow clone has none: git fetch --unshallow)`,
    );
  }
  const root = join(CACHE, commit);
  if (await exists(join(root, 'dist/main.js'))) return { commit, root };
  await rm(root, { recursive: true, force: true });
  await mkdir(root, { recursive: true });
  await run('sh', ['-c', `git archive ${commit} | tar -x -C "${root}"`]);
  await symlink(resolve('node_modules'), join(root, 'node_modules'), 'dir');
  try {
    await run(process.execPath, [resolve('node_modules/typescript/bin/tsc'), '-b', 'tsconfig.build.json'], {
      cwd: root,
    });
  } catch (error) {
    await rm(root, { recursive: true, force: true });
    const output = (error as { stdout?: string }).stdout ?? '';
    throw new Error(`commit ${commit} did not build with this checkout's dependencies:\n${output.slice(0, 2000)}`, {
      cause: error,
    });
  }
  return { commit, root };
}

/**
 * `ref`'s build, or why there is none, for a suite that still measures everything else without
 * it (a shallow clone has no older commit).
 */
export function baselineOrWhyNot(ref: string): Promise<BaselineBuild | Error> {
  return baselineBuild(ref).catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
