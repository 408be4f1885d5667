#!/usr/bin/env node
// The `memgate` command. `memgate` (or `memgate serve`, `npm start`) is the service,
// configured by environment (see USAGE); exits 0 once stopped cleanly, 1 when it failed, 2
// for bad usage or configuration (a setting, the policy file). `memgate policies FILE`,
// `memgate usage …` and `memgate what-if …` are the operator's tools (src/commands/).
//
// Memory (docs/operations.md, "Memory"): left alone, V8 lets the heap grow to a quarter of
// the machine's memory before it must collect, whatever MEMGATE_CACHE_MB says. A heap limit
// can only be given when V8 starts, so unless the operator gave node one of their own
// (--max-old-space-size, on node's command line or in NODE_OPTIONS), this process starts
// the service as its child with a limit from the cache budget (heapLimitFromBudget), hands
// it the signals and exits with its code. Not a worker thread: a worker's limit is set the
// same way, but it served a check for about 5% more CPU; this launcher costs about 8 MiB.
// It also gives V8 no more helper threads than cores (v8HelperThreads).
import { spawn } from 'node:child_process';
import { writeSync } from 'node:fs';
import { availableParallelism, getPriority } from 'node:os';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';
import { DEFAULTS } from './config/defaults.js';
import { loadSettings, SettingsError, USAGE, type LoadedSettings, type Settings } from './config/settings.js';
import { VERSION } from './config/version.js';
import { MAX_NICE, setThreadsNice } from './config/thread-priority.js';
// Types only: the service's modules are loaded by the process that serves (see serve()).
import type { Logger } from 'pino';
import type { HeapLimit, RunningService } from './service.js';

const EXIT_FAILED = 1;
const EXIT_BAD_CONFIGURATION = 2;

/**
 * Set by the launcher in its child's environment: its own pid. The child then serves with
 * the limit it was given, says it came from the budget, and stops if the launcher is gone.
 */
const LAUNCHER_PID = 'NODE_MEMGATE_LAUNCHER_PID';

/** The signals an operator or a supervisor sends the service; the launcher hands each on. */
const FORWARDED: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];

/**
 * Heap one item of the embedded store takes at most (its key, count and expiry; measured,
 * 272 bytes for keys of short names, 411 for the longest prefix, event and feature): without
 * MEMCACHED_SERVERS the counters live in this heap too, up to DEFAULTS.embeddedMaxItems of
 * them, outside MEMGATE_CACHE_MB.
 */
const EMBEDDED_ITEM_BYTES = 420;

/**
 * The old-space limit memgate gives V8: the cache budget, what the rest of the process
 * keeps live and room for garbage between collections (DEFAULTS.heapBeyondCacheMb), and
 * the embedded store's most when it holds the counters.
 */
function heapLimitFromBudget(settings: Settings): number {
  const embeddedMb =
    settings.memcachedServers || settings.memcachedSrv
      ? 0
      : Math.ceil((DEFAULTS.embeddedMaxItems * EMBEDDED_ITEM_BYTES) / 2 ** 20);
  return settings.cacheMb + DEFAULTS.heapBeyondCacheMb + embeddedMb;
}

/** Whether node was given a heap limit: on its command line, or in NODE_OPTIONS. */
function operatorHeapLimit(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  return nodeFlags(execArgv, nodeOptions).some((flag) => /^--max[-_](old[-_]space|heap)[-_]size(=|$)/.test(flag));
}

function nodeFlags(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  return [...execArgv, ...(nodeOptions ?? '').split(/\s+/)];
}

/**
 * V8's helper threads (concurrent marking, parallel scavenges, optimising compiles): node
 * starts 4 whatever the machine. Past the cores they only take turns with the serving
 * thread: on 2 cores, three reloads of the largest policy file held /check up to 53 and 75 ms
 * with 4 helpers, 28 and 34 with 2 (docs/operations.md, Memory). Unless the
 * operator chose a number (--v8-pool-size).
 */
function v8HelperThreads(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  if (nodeFlags(execArgv, nodeOptions).some((flag) => /^--v8[-_]pool[-_]size(=|$)/.test(flag))) return [];
  return [`--v8-pool-size=${Math.min(4, availableParallelism())}`];
}

function fail(code: number, text: string): never {
  // Written at once: process.exit does not wait for a piped stderr to drain.
  writeSync(2, text);
  process.exit(code);
}

function readSettings(args: readonly string[]): LoadedSettings {
  try {
    return loadSettings(process.env, args);
  } catch (error) {
    if (!(error instanceof SettingsError)) throw error;
    return fail(EXIT_BAD_CONFIGURATION, error.problems.map((problem) => `memgate: ${problem}\n`).join(''));
  }
}

/**
 * Serves here when node has a heap limit (the launcher's, or the operator's) or runs the
 * TypeScript source (`npm run dev`, whose loader a child would have to be told of);
 * otherwise launches the service with a limit from the budget.
 */
function start(): void {
  const [first, ...rest] = process.argv.slice(2);
  // The operator's tools load only what they need: none of the service.
  if (first === 'policies') {
    void import('./commands/policies.js').then(({ runPolicies }) => {
      runPolicies(rest);
    });
    return;
  }
  if (first === 'usage') {
    void import('./commands/usage.js').then(({ runUsage }) => {
      runUsage(rest);
    });
    return;
  }
  if (first === 'what-if') {
    void import('./commands/what-if.js').then(({ runWhatIf }) => {
      runWhatIf(rest);
    });
    return;
  }
  const settings = readSettings(first === 'serve' ? rest : process.argv.slice(2));
  if (settings.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (settings.version) {
    process.stdout.write(`memgate ${VERSION}\n`);
    return;
  }
  const launcherPid = process.env[LAUNCHER_PID];
  if (launcherPid !== undefined) {
    // The channel to the launcher is only there to notice its end: it keeps nothing alive.
    process.channel?.unref();
    void serve(settings, { from: 'budget' }, (stop) => {
      for (const signal of FORWARDED) process.on(signal, stop);
      // The launcher went without telling (killed outright): nobody would stop this one.
      process.on('disconnect', () => {
        stop('SIGTERM');
      });
    });
    return;
  }
  if (operatorHeapLimit(process.execArgv, process.env.NODE_OPTIONS) || import.meta.url.endsWith('.ts')) {
    void serve(settings, { from: 'node' }, (stop) => {
      for (const signal of FORWARDED) process.on(signal, stop);
    });
    return;
  }
  launch(settings);
}

/** Starts the service as a child with its heap limit, and lives as long as it does. */
function launch(settings: Settings): void {
  const oldSpaceMb = heapLimitFromBudget(settings);
  const child = spawn(
    process.execPath,
    [
      ...process.execArgv,
      `--max-old-space-size=${oldSpaceMb}`,
      ...v8HelperThreads(process.execArgv, process.env.NODE_OPTIONS),
      fileURLToPath(import.meta.url),
      ...process.argv.slice(2),
    ],
    {
      env: { ...process.env, [LAUNCHER_PID]: String(process.pid) },
      // In the launcher's session and process group, not one of its own: Linux shares the
      // CPU between sessions first (autogroup), so in a session of its own the service's
      // share hung on who else ran: small on a busy machine (each check then cost more), a
      // core apart from a benchmark's load generator on an idle one (docs/operations.md,
      // Memory). A terminal's Ctrl-C then reaches both, and the launcher hands it on too:
      // the service takes the same signal repeated within DEFAULTS.repeatedSignalMs as one.
      stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    },
  );
  for (const signal of FORWARDED) {
    process.on(signal, () => {
      child.kill(signal);
    });
  }
  child.on('error', (error) => fail(EXIT_FAILED, `memgate: cannot start the service: ${error.message}\n`));
  child.on('exit', (code, signal) => {
    if (code !== null) process.exit(code);
    // V8 aborts when the heap is full; the kernel kills when the machine is.
    const line = {
      level: 60,
      time: Date.now(),
      service: 'memgate',
      signal,
      oldSpaceMb,
      cacheMb: settings.cacheMb,
      msg: `memgate stopped on ${String(signal)}; if V8 said "heap out of memory" above, its old space, ${oldSpaceMb} MiB (MEMGATE_CACHE_MB plus ${oldSpaceMb - settings.cacheMb}), was too small for what it held: lower MEMGATE_CACHE_MB, or set a larger --max-old-space-size in NODE_OPTIONS (see docs/operations.md, Memory)`,
    };
    fail(EXIT_FAILED, `${JSON.stringify(line)}\n`);
  });
}

/** Starts the service, stops it on the signals `onSignal` reports, and exits. */
async function serve(
  settings: LoadedSettings,
  heapLimit: HeapLimit,
  onSignal: (stop: (signal: NodeJS.Signals) => void) => void,
): Promise<void> {
  // SIGHUP's default ends the process: until the handlers below are in, one only asks for a
  // reload once the service is up.
  const pending = { reload: false };
  const early = () => {
    pending.reload = true;
  };
  process.on('SIGHUP', early);
  // V8's helper threads (concurrent marking, parallel compiling) below the serving thread: on
  // a busy machine a collection's background work then waits for a core, not a check. Their
  // work waits; the serving thread takes over what is urgent (docs/operations.md, Memory).
  setThreadsNice({ nice: Math.min(MAX_NICE, getPriority() + DEFAULTS.v8HelperNiceBy), exceptMain: true });
  // Loaded here, not above: the launcher needs none of it.
  const [{ pino }, { PolicyError }, { startService }] = await Promise.all([
    import('pino'),
    import('./config/policies.js'),
    import('./service.js'),
  ]);
  // Synchronous writes: memgate logs at start, stop and on errors, never per request, so
  // this costs nothing, and no line is lost when the process exits right after it.
  const logger = pino(
    // Secrets never reach the log, even if a request is logged one day.
    {
      level: settings.logLevel,
      base: { service: 'memgate' },
      redact: ['req.headers.authorization', 'password', 'token'],
    },
    pino.destination({ dest: 1, sync: true }),
  );
  // A deployment of envoyproxy/ratelimit brought its variables: say which were read as memgate's.
  if (settings.fromUpstream.length > 0) {
    logger.info(
      { fromUpstream: settings.fromUpstream },
      `read envoyproxy/ratelimit's settings: ${settings.fromUpstream.join(', ')}`,
    );
  }
  let stopping: { signal: NodeJS.Signals; at: number } | undefined;
  let service: RunningService | undefined;
  onSignal((signal) => {
    // SIGHUP reads the policy files again, as daemons do; the rejection is logged.
    if (signal === 'SIGHUP') {
      if (!service) pending.reload = true;
      else if (!stopping) void service.reloadPolicies().catch(() => undefined);
      return;
    }
    if (stopping) {
      // One stop often arrives twice at once: systemd signals every process of the unit,
      // `timeout` and shells the whole process group, and the launcher hands it on too.
      if (signal === stopping.signal && performance.now() - stopping.at < DEFAULTS.repeatedSignalMs) return;
      // A second signal, later or another, means "now": skip the rest of the drain.
      logger.warn({ signal }, 'second signal while draining; exiting now');
      process.exit(1);
    }
    stopping = { signal, at: performance.now() };
    if (service) shutDown(service, signal, settings.shutdownDrainMs, logger);
  });
  process.off('SIGHUP', early);
  try {
    service = await startService(settings, logger, heapLimit);
  } catch (error) {
    // Start-up faults are for a person at a terminal: plain text, one line (a bad policy
    // file: one per problem), the stack only when asked for.
    if (error instanceof PolicyError) fail(EXIT_BAD_CONFIGURATION, `memgate: ${error.message}\n`);
    const debug = settings.logLevel === 'debug' || settings.logLevel === 'trace';
    fail(EXIT_FAILED, `memgate: ${debug ? inspect(error) : firstLine(error)}\n`);
  }
  // Signalled while starting: stop now that there is something to stop, or reload.
  if (stopping) shutDown(service, stopping.signal, settings.shutdownDrainMs, logger);
  else if (pending.reload) void service.reloadPolicies().catch(() => undefined);
}

/** An error's message without its class name or stack: "cannot listen on 0.0.0.0:8080: listen EADDRINUSE …". */
function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0] ?? message;
}

/** Drains (on SIGTERM only), stops, and exits 0; exits 1 when that fails or takes too long. */
function shutDown(service: RunningService, signal: NodeJS.Signals, shutdownDrainMs: number, logger: Logger): void {
  // SIGTERM comes from orchestrators (Kubernetes, docker stop), whose load balancers need
  // the drain to move clients away. SIGINT is Ctrl-C at a terminal: nobody balances load
  // onto that process, and its user wants it to stop now.
  const drainMs = signal === 'SIGTERM' ? shutdownDrainMs : 0;
  logger.info(
    { signal, drainMs },
    drainMs > 0
      ? `draining for ${drainMs} ms: /readyz answers 503 and every answer closes its connection; then the listener closes`
      : 'stopping without a drain: the listener closes now',
  );
  setTimeout(() => {
    logger.error('shutdown took too long; exiting');
    process.exit(1);
  }, drainMs + DEFAULTS.shutdownGraceMs).unref();
  service.close({ drainMs }).then(
    () => {
      logger.info('stopped');
      process.exit(0);
    },
    (err: unknown) => {
      logger.error({ err }, 'failed to stop cleanly');
      process.exit(1);
    },
  );
}

start();
