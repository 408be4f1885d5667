/**
 * Reloading the policies while serving: when their files change on disk (watched), on
 * SIGHUP, and on POST /admin/reload. One reload at a time, swapped in one step (service.ts's
 * `apply`); files that do not load keep the policies in use. Each load has a version, a hash
 * of the very bytes it parsed, so an operator sees every instance converge on the same one.
 */
import { createHash } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';
import { setImmediate } from 'node:timers/promises';
import { basename, dirname, extname } from 'node:path';
import type { Logger } from 'pino';
import { DEFAULTS } from './config/defaults.js';
import { readEnvoyFiles, type EnvoyConfig } from './config/envoy-config.js';
import { withEnvoyLimits } from './config/envoy-events.js';
import { PARSE_LIMITS, parseApart, START_PARSE_LIMITS } from './config/parse-apart.js';
import { PolicyError, readPolicyText, type PolicySet } from './config/policies.js';
import { inSlices } from './config/in-slices.js';
import { describeChanges, policyChangeSteps } from './config/policy-changes.js';
import type { ReloadCarried } from './shared/contract.js';

/** What asked for a reload. */
export type ReloadTrigger = 'watch' | 'signal' | 'admin';

export interface LoadedPolicies {
  readonly policies: PolicySet;
  readonly envoy: EnvoyConfig | undefined;
  /** The two as one set, what the limiter counts by. */
  readonly counted: PolicySet;
  /** The first 12 hex digits of the SHA-256 of the files' names and texts, as parsed. */
  readonly version: string;
}

export interface PolicyPaths {
  readonly policies: string;
  /** MEMGATE_ENVOY_CONFIG: a file, or a directory of them. */
  readonly envoy?: string | undefined;
  /** How the Envoy files are read: a domain in several of them merged (MEMGATE_ENVOY_MERGE_DOMAINS). */
  readonly mergeEnvoyDomains?: boolean;
}

export interface LoadOptions {
  /** A reload beside checks being served: parsed below the service in priority, apart unless tiny (PARSE_LIMITS). */
  readonly whileServing?: boolean;
}

/** Reads and parses the files once: the version is of the bytes parsed. Rejects with PolicyError. */
export async function loadPolicies(
  paths: PolicyPaths,
  { whileServing = false }: LoadOptions = {},
): Promise<LoadedPolicies> {
  const text = await readPolicyText(paths.policies);
  const envoyTexts = paths.envoy === undefined ? undefined : await readEnvoyFiles(paths.envoy);
  const hash = createHash('sha256');
  for (const [file, content] of [[paths.policies, text] as const, ...(envoyTexts ?? [])]) {
    hash.update(`${file}\0${content}\0`);
  }
  // Parsed in a process of its own: the largest file takes seconds and hundreds of MiB (small ones here, parse-apart.ts).
  const { policies, envoy } = await parseApart(
    {
      policies: { text, source: paths.policies },
      envoy:
        envoyTexts && paths.envoy !== undefined
          ? { files: envoyTexts, source: paths.envoy, mergeDomains: paths.mergeEnvoyDomains ?? false }
          : undefined,
    },
    whileServing ? PARSE_LIMITS : START_PARSE_LIMITS,
  );
  return { policies, envoy, counted: withEnvoyLimits(policies, envoy), version: hash.digest('hex').slice(0, 12) };
}

export interface PolicyReloaderOptions {
  readonly paths: PolicyPaths;
  /** What the service started with (loadPolicies). */
  readonly initial: LoadedPolicies;
  /**
   * Puts a load in use (the limiter and the Envoy configuration together); answers what it kept
   * of each event's counts when not exact at once (counting/sizing.ts, reloadCarries).
   */
  readonly apply: (
    loaded: LoadedPolicies,
  ) => Promise<readonly ReloadCarried[] | undefined> | readonly ReloadCarried[] | undefined;
  /** Reload when the files change on disk (MEMGATE_POLICY_WATCH). */
  readonly watch: boolean;
  /** How often the watched folders are looked at again (MEMGATE_POLICY_WATCH_RECHECK_MS); DEFAULTS.policyWatchRecheckMs by default. */
  readonly recheckMs?: number;
  readonly logger: Logger;
  /** Told each version put in use, the first included. */
  readonly onVersion?: (version: string) => void;
  readonly onFailure?: (trigger: ReloadTrigger) => void;
}

export type ReloadResult =
  | {
      readonly reloaded: true;
      readonly version: string;
      readonly source: string;
      readonly events: string[];
      /** Events whose new limits are judged conservatively (or afresh) until a time: the reload's bounds. */
      readonly carried: readonly ReloadCarried[];
    }
  | { readonly reloaded: false; readonly version: string };

export interface PolicyReloader {
  readonly version: string;
  /** Rejects with PolicyError when the files do not load (the policies in use stay). */
  reload(trigger: ReloadTrigger): Promise<ReloadResult>;
  /** Stops watching; a reload under way puts nothing in use. */
  close(): void;
}

export async function createPolicyReloader(options: PolicyReloaderOptions): Promise<PolicyReloader> {
  const { paths, logger } = options;
  let current = options.initial;
  options.onVersion?.(current.version);
  logWarnings(logger, current, 'start');
  let queue: Promise<unknown> = Promise.resolve();
  let closed = false;
  // Read through a call: a close may come while a reload awaits its files.
  const isClosed = () => closed;

  async function reloadNow(trigger: ReloadTrigger): Promise<ReloadResult> {
    if (closed) return { reloaded: false, version: current.version };
    /** Logged and counted, as every reload that puts nothing in use; rethrown as a PolicyError. */
    const refused = (error: unknown): never => {
      options.onFailure?.(trigger);
      const problems = error instanceof PolicyError ? error.problems : [(error as Error).message];
      logger.error(
        { trigger, problems, version: current.version },
        `policy reload (${trigger}) refused, the policies in use stay (version ${current.version}): ${problems.join('; ')}`,
      );
      throw error instanceof PolicyError ? error : new PolicyError(paths.policies, problems);
    };
    let next: LoadedPolicies;
    try {
      next = await loadPolicies(paths, { whileServing: true });
    } catch (error) {
      return refused(error);
    }
    // A save that changed nothing (or a touch) reloads nothing: no cache or lease is dropped.
    if (isClosed() || next.version === current.version) return { reloaded: false, version: current.version };
    // Each stage on the serving thread takes tens of ms for the largest file: checks waiting
    // are answered between them, not after all of them.
    await setImmediate();
    const described = describeChanges(await inSlices(policyChangeSteps(current.counted, next.counted)));
    await setImmediate();
    const changes =
      described === 'no change'
        ? 'no limit changed (formatting, or Envoy settings such as shadow_mode or replaces)'
        : described;
    // Planned in slices (a limit that reads too many keys is refused there).
    const carried = (await Promise.resolve(options.apply(next)).catch(refused)) ?? [];
    current = next;
    options.onVersion?.(next.version);
    logger.info(
      { trigger, version: next.version, source: next.policies.source, ...(carried.length > 0 ? { carried } : {}) },
      `policies reloaded (${trigger}), version ${next.version}: ${changes}${describeCarried(carried)}`,
    );
    logWarnings(logger, next, trigger);
    return {
      reloaded: true,
      version: next.version,
      source: next.policies.source,
      events: [...next.counted.events.keys()],
      carried,
    };
  }

  /** One reload at a time, in order. */
  function reload(trigger: ReloadTrigger): Promise<ReloadResult> {
    const done = queue.then(() => reloadNow(trigger));
    queue = done.catch(() => undefined);
    return done;
  }

  // Changes come in bursts (an editor writes and renames, a ConfigMap swaps links): one
  // reload once they settle (DEFAULTS.policyWatchSettleMs), or at the latest five settle times
  // after the first, so that a steady stream of changes cannot hold it off.
  let timer: NodeJS.Timeout | undefined;
  let firstChangeAt: number | undefined;
  function changed(): void {
    if (closed) return;
    const now = performance.now();
    firstChangeAt ??= now;
    clearTimeout(timer);
    const wait = Math.max(
      0,
      Math.min(DEFAULTS.policyWatchSettleMs, firstChangeAt + 5 * DEFAULTS.policyWatchSettleMs - now),
    );
    timer = setTimeout(() => {
      firstChangeAt = undefined;
      void reload('watch').catch(() => undefined);
    }, wait);
    timer.unref();
  }

  const watching = options.watch
    ? await watchFolders(paths, changed, logger, options.recheckMs ?? DEFAULTS.policyWatchRecheckMs)
    : undefined;
  // Written between the service's first read and the watch starting: caught now.
  if (options.watch) changed();
  return {
    get version() {
      return current.version;
    },
    reload,
    close() {
      closed = true;
      clearTimeout(timer);
      watching?.close();
    },
  };
}

/**
 * ` | counts carried: api conservative for 82 s (…)`: the events a reload does not judge exactly
 * on what was counted yet, a few named and the rest counted, as for changes.
 */
export function describeCarried(carried: readonly ReloadCarried[]): string {
  if (carried.length === 0) return '';
  const named = carried
    .slice(0, CARRIED_NAMED)
    .map(({ event, how, secondsUntilExact, reasons }) =>
      how === 'not-carried'
        ? `${event} not carried (${reasons.join('; ')}) for ${secondsUntilExact} s`
        : `${event} conservative for ${secondsUntilExact} s (${reasons.join('; ')})`,
    );
  const more = carried.length > CARRIED_NAMED ? [`${carried.length - CARRIED_NAMED} more events`] : [];
  return ` | counts carried: ${[...named, ...more].join(' | ')}`;
}

const CARRIED_NAMED = 10;

/** What a file loaded with says the operator should know (PolicySet.warnings): one line per load, at warn. */
function logWarnings(logger: Logger, loaded: LoadedPolicies, when: ReloadTrigger | 'start'): void {
  const { warnings, source } = loaded.policies;
  if (warnings.length === 0) return;
  logger.warn(
    { when, version: loaded.version, source, warnings },
    `policies in ${source} (version ${loaded.version}) loaded with ${warnings.length} warning${warnings.length === 1 ? '' : 's'}: ${warnings.join('; ')}`,
  );
}

/**
 * Watches the folders that hold the files: editors save by writing a new file and renaming
 * it over the old one, and Kubernetes swaps a ConfigMap's files by renaming a link
 * (`..data`), neither of which a watch on the file itself would follow. Every change that
 * may concern a file leads to a read, and a read whose bytes are the same reloads nothing.
 * A folder removed and made again is watched again at the next look (every `recheckMs`),
 * which reads the files too.
 */
async function watchFolders(
  paths: PolicyPaths,
  changed: () => void,
  logger: Logger,
  recheckMs: number,
): Promise<{ close(): void }> {
  const folders = new Map<string, ((name: string) => boolean)[]>();
  const add = (folder: string, concerns: (name: string) => boolean) => {
    folders.set(folder, [...(folders.get(folder) ?? []), concerns]);
  };
  const file = (path: string) => {
    const name = basename(path);
    add(dirname(path), (changedName) => changedName === name || changedName.startsWith('..'));
  };
  file(paths.policies);
  if (paths.envoy !== undefined) {
    if ((await stat(paths.envoy).catch(() => undefined))?.isDirectory()) {
      add(paths.envoy, (name) => ['.yaml', '.yml'].includes(extname(name).toLowerCase()) || name.startsWith('..'));
    } else file(paths.envoy);
  }
  /**
   * Each folder's watcher and the folder it watches, by inode and birth time: a folder made
   * again often gets the inode of the one removed.
   */
  const watched = new Map<string, { watcher: FSWatcher; identity: string } | undefined>();
  /** Watches `folder` unless its watch still holds; whether anything changed since the last look. */
  async function arm(folder: string, concerns: readonly ((name: string) => boolean)[]): Promise<boolean> {
    const info = await stat(folder).catch(() => undefined);
    const identity = info && `${info.ino}:${info.birthtimeMs}`;
    const current = watched.get(folder);
    if (current?.identity === identity) return false;
    current?.watcher.close();
    watched.set(folder, undefined);
    if (identity === undefined) return current !== undefined;
    try {
      const watcher = watch(folder, { persistent: false }, (_event, name) => {
        if (name === null || concerns.some((concern) => concern(name))) changed();
      });
      watcher.on('error', (err) => {
        logger.warn({ err, folder }, `stopped watching ${folder} for policy changes; watching again once it is back`);
      });
      watched.set(folder, { watcher, identity });
      return true;
    } catch (err) {
      logger.warn(
        { err, folder },
        `cannot watch ${folder} for policy changes; SIGHUP or POST /admin/reload still reload`,
      );
      return false;
    }
  }
  // The first look: what it finds is the start, not a change.
  for (const [folder, concerns] of folders) await arm(folder, concerns);
  const recheck = setInterval(() => {
    void (async () => {
      let moved = false;
      for (const [folder, concerns] of folders) moved = (await arm(folder, concerns)) || moved;
      if (moved) changed();
    })();
  }, recheckMs);
  recheck.unref();
  return {
    close() {
      clearInterval(recheck);
      for (const entry of watched.values()) entry?.watcher.close();
    },
  };
}
