/**
 * Reloading the policies while serving: when their files change on disk (watched), on
 * SIGHUP, and on POST /admin/reload. One reload at a time, swapped in one step (service.ts's
 * `apply`); a file that does not load keeps the policies in use. Each load has a version, a
 * hash of the files' bytes, so an operator sees every instance converge on the same one.
 */
import { createHash } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import type { Logger } from 'pino';
import { DEFAULTS } from './config/defaults.js';
import type { EnvoyConfig } from './config/envoy-config.js';
import { PolicyError, type PolicySet } from './config/policies.js';
import { describeChanges, policyChanges } from './config/policy-changes.js';

/** What asked for a reload. */
export type ReloadTrigger = 'watch' | 'signal' | 'admin';

export interface LoadedPolicies {
  readonly policies: PolicySet;
  readonly envoy: EnvoyConfig | undefined;
  /** The two as one set, what the limiter counts by. */
  readonly counted: PolicySet;
}

export interface PolicyPaths {
  readonly policies: string;
  /** MEMGATE_ENVOY_CONFIG: a file, or a directory of them. */
  readonly envoy?: string | undefined;
}

export interface PolicyReloaderOptions {
  readonly paths: PolicyPaths;
  readonly initial: LoadedPolicies;
  readonly load: () => Promise<LoadedPolicies>;
  /** Puts a load in use (the limiter and the Envoy configuration together). */
  readonly apply: (loaded: LoadedPolicies) => void;
  /** Reload when the files change on disk (MEMGATE_POLICY_WATCH). */
  readonly watch: boolean;
  readonly logger: Logger;
  /** Told each version put in use, the first included. */
  readonly onVersion?: (version: string) => void;
  readonly onFailure?: (trigger: ReloadTrigger) => void;
}

export type ReloadResult =
  | { readonly reloaded: true; readonly version: string; readonly source: string; readonly events: string[] }
  | { readonly reloaded: false; readonly version: string };

export interface PolicyReloader {
  /** The version in use: the first 12 hex digits of the files' SHA-256. */
  readonly version: string;
  /** Rejects with PolicyError when the files do not load (the policies in use stay). */
  reload(trigger: ReloadTrigger): Promise<ReloadResult>;
  /** Stops watching. */
  close(): void;
}

export async function createPolicyReloader(options: PolicyReloaderOptions): Promise<PolicyReloader> {
  const { paths, logger } = options;
  let current = options.initial;
  let version = await policyVersion(paths);
  options.onVersion?.(version);
  let queue: Promise<unknown> = Promise.resolve();
  let watchQueued = false;

  async function reloadNow(trigger: ReloadTrigger): Promise<ReloadResult> {
    const before = await policyVersion(paths);
    // A save that changed nothing (or a touch) reloads nothing; a signal or an admin does.
    if (trigger === 'watch' && before === version) return { reloaded: false, version };
    let next: LoadedPolicies;
    try {
      next = await options.load();
    } catch (error) {
      options.onFailure?.(trigger);
      const problems = error instanceof PolicyError ? error.problems : [(error as Error).message];
      logger.error(
        { trigger, problems, version },
        `policy reload (${trigger}) refused, the policies in use stay (version ${version}): ${problems.join('; ')}`,
      );
      throw error;
    }
    // Written again while it was read: load once more after this one.
    if ((await policyVersion(paths)) !== before) schedule();
    const changes = describeChanges(policyChanges(current.counted, next.counted));
    options.apply(next);
    current = next;
    version = before;
    options.onVersion?.(version);
    logger.info(
      { trigger, version, source: next.policies.source },
      `policies reloaded (${trigger}), version ${version}: ${changes}`,
    );
    return { reloaded: true, version, source: next.policies.source, events: [...next.counted.events.keys()] };
  }

  /** One reload at a time, in order. */
  function reload(trigger: ReloadTrigger): Promise<ReloadResult> {
    const done = queue.then(() => reloadNow(trigger));
    queue = done.catch(() => undefined);
    return done;
  }

  // Changes come in bursts (an editor writes and renames, a ConfigMap swaps links): one
  // reload once they settle.
  let timer: NodeJS.Timeout | undefined;
  function schedule(): void {
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (watchQueued) return;
      watchQueued = true;
      void reload('watch')
        .catch(() => undefined)
        .finally(() => {
          watchQueued = false;
        });
    }, DEFAULTS.policyWatchSettleMs);
    timer.unref();
  }

  const watchers = options.watch ? await watchFiles(paths, schedule, logger) : [];
  return {
    get version() {
      return version;
    },
    reload,
    close() {
      clearTimeout(timer);
      for (const watcher of watchers) watcher.close();
    },
  };
}

/** The files a load reads, in the order it reads them: the policy file, then Envoy's. */
async function policyFiles(paths: PolicyPaths): Promise<string[]> {
  const files = [paths.policies];
  if (paths.envoy === undefined) return files;
  const info = await stat(paths.envoy).catch(() => undefined);
  if (!info?.isDirectory()) return [...files, paths.envoy];
  const names = (await readdir(paths.envoy))
    .filter((name) => !name.startsWith('.') && ['.yaml', '.yml'].includes(extname(name).toLowerCase()))
    .sort();
  return [...files, ...names.map((name) => join(paths.envoy as string, name))];
}

/** The first 12 hex digits of the SHA-256 of every file's name and bytes (an unreadable one by its error). */
export async function policyVersion(paths: PolicyPaths): Promise<string> {
  const hash = createHash('sha256');
  for (const file of await policyFiles(paths)) {
    hash.update(`${file}\0`);
    hash.update(await readFile(file).catch((error: unknown) => `unreadable: ${(error as Error).message}`));
    hash.update('\0');
  }
  return hash.digest('hex').slice(0, 12);
}

/**
 * Watches the folders that hold the files: editors save by writing a new file and renaming
 * it over the old one, and Kubernetes swaps a ConfigMap's files by renaming a link
 * (`..data`), neither of which a watch on the file itself would follow.
 */
async function watchFiles(paths: PolicyPaths, changed: () => void, logger: Logger): Promise<FSWatcher[]> {
  const targets = new Map<string, (name: string) => boolean>();
  const watchFile = (file: string) => {
    const name = basename(file);
    targets.set(dirname(file), (changedName) => changedName === name || changedName.startsWith('..'));
  };
  watchFile(paths.policies);
  if (paths.envoy !== undefined) {
    const isDirectory = (await stat(paths.envoy).catch(() => undefined))?.isDirectory() ?? false;
    if (isDirectory) targets.set(paths.envoy, () => true);
    else watchFile(paths.envoy);
  }
  const watchers: FSWatcher[] = [];
  for (const [folder, matters] of targets) {
    try {
      const watcher = watch(folder, { persistent: false }, (_event, name) => {
        if (name === null || matters(name)) changed();
      });
      watcher.on('error', (err) => {
        logger.warn(
          { err, folder },
          `stopped watching ${folder} for policy changes; SIGHUP or POST /admin/reload still reload`,
        );
      });
      watchers.push(watcher);
    } catch (err) {
      logger.warn(
        { err, folder },
        `cannot watch ${folder} for policy changes; SIGHUP or POST /admin/reload still reload`,
      );
    }
  }
  return watchers;
}
