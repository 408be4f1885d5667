#!/usr/bin/env node
// The memgate service: `npm start`, configured by environment (see USAGE). Exits 0 once
// stopped cleanly, 1 when it failed, 2 for bad usage or configuration (a setting, the
// policy file).
import { inspect } from 'node:util';
import { pino, type Logger } from 'pino';
import { DEFAULTS } from './config/defaults.js';
import { PolicyError } from './config/policies.js';
import { loadSettings, SettingsError, USAGE } from './config/settings.js';
import { startService, type RunningService } from './service.js';

const EXIT_FAILED = 1;
const EXIT_BAD_CONFIGURATION = 2;

async function main(): Promise<void> {
  let settings;
  try {
    settings = loadSettings(process.env, process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof SettingsError)) throw error;
    for (const problem of error.problems) process.stderr.write(`memgate: ${problem}\n`);
    process.exit(EXIT_BAD_CONFIGURATION);
  }
  if (settings.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
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
  // Handlers first: until one is installed, a signal kills the process outright, and a
  // supervisor may signal as soon as it sees the service listening.
  let stopping: NodeJS.Signals | undefined;
  let service: RunningService | undefined;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) {
      // A second signal means "now": skip the rest of the drain.
      logger.warn({ signal }, 'second signal while draining; exiting now');
      process.exit(1);
    }
    stopping = signal;
    if (service) shutDown(service, signal, settings.shutdownDrainMs, logger);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  try {
    service = await startService(settings, logger);
  } catch (error) {
    // Start-up faults are for a person at a terminal: plain text, one line (a bad policy
    // file: one per problem), the stack only when asked for.
    if (error instanceof PolicyError) {
      process.stderr.write(`memgate: ${error.message}\n`);
      process.exit(EXIT_BAD_CONFIGURATION);
    }
    const debug = settings.logLevel === 'debug' || settings.logLevel === 'trace';
    process.stderr.write(`memgate: ${debug ? inspect(error) : firstLine(error)}\n`);
    process.exit(EXIT_FAILED);
  }
  // Signalled while starting: stop now that there is something to stop.
  if (stopping) shutDown(service, stopping, settings.shutdownDrainMs, logger);
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

await main();
