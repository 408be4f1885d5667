import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULTS } from './defaults.js';

/** How the service runs, from the environment and the command line. */
export interface Settings {
  readonly port: number;
  readonly host: string;
  /** The policy file: --config, else MEMGATE_CONFIG, else the bundled example. */
  readonly configPath: string;
  /** `host:port,…`; the embedded store is used when absent. */
  readonly memcachedServers?: string;
  readonly memcachedTimeoutMs: number;
  readonly memcachedMaxInFlight: number;
  /** SASL credentials for every server without its own `user:password@`. */
  readonly memcachedCredentials?: { readonly username: string; readonly password: string };
  readonly keyPrefix: string;
  readonly logLevel: string;
  readonly maxClockSkewMs: number;
  /** Memory budget of the local caches, in MiB. */
  readonly cacheMb: number;
  readonly maxDenialCacheMs: number;
  /** Turns on /admin/reset and /admin/reload, which need it as a bearer token. */
  readonly adminToken?: string;
  readonly maxEventLoopDelayMs: number;
  /** After SIGTERM, how long requests are still answered, each closing its connection, before the listener closes. */
  readonly shutdownDrainMs: number;
}

/** The example policies shipped in config/, beside src/ and dist/. */
export const BUNDLED_POLICIES = fileURLToPath(new URL('../../config/policies.yaml', import.meta.url));

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export const USAGE = `usage: memgate [--config FILE]

Environment:
  PORT                   port to serve on (default 8080)
  HOST                   address to bind (default 0.0.0.0)
  MEMGATE_CONFIG         policy file, YAML or JSON (--config wins; default: the bundled example)
  MEMCACHED_SERVERS      host:port,host:port (unset: the embedded store, for one instance)
  MEMCACHED_TIMEOUT_MS   how long a server may stay silent while a call waits (default 250)
  MEMCACHED_MAX_IN_FLIGHT      checks waiting on Memcached at once; more are shed with 503 (default 1000)
  MEMCACHED_USERNAME, MEMCACHED_PASSWORD   SASL credentials (both or neither)
  MEMGATE_KEY_PREFIX     prefix of every Memcached key (default mg)
  MEMGATE_MAX_CLOCK_SKEW_MS    how far apart instances' times may be; a host clock further from Memcached's is warned about (default 2000)
  MEMGATE_CACHE_MB       memory for settled counts and denials kept between checks, all events (default 256; 0 none)
  MEMGATE_MAX_DENIAL_CACHE_MS  longest a denial is repeated from memory (default 1000; 0 never)
  MEMGATE_MAX_EVENT_LOOP_DELAY_MS  shed checks with 503 while the event loop lags more (default 1000; 0 never)
  MEMGATE_SHUTDOWN_DRAIN_MS    after SIGTERM, how long requests are still answered, each closing its connection, while /readyz answers 503 (default ${DEFAULTS.shutdownDrainMs}; 0 none; SIGINT skips it)
  MEMGATE_ADMIN_TOKEN    bearer token (16+ characters) of /admin/reset and /admin/reload; unset: no admin routes
  LOG_LEVEL              fatal, error, warn, info, debug, trace or silent (default info)`;

/** A setting that cannot be used; the message says which and why. */
export class SettingsError extends Error {
  override name = 'SettingsError';
}

export function loadSettings(env: NodeJS.ProcessEnv, argv: readonly string[]): Settings & { help: boolean } {
  let args;
  try {
    args = parseArgs({ args: [...argv], options: { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' } } });
  } catch (error) {
    throw new SettingsError(`${(error as Error).message}\n${USAGE}`);
  }
  const servers = setting(env, 'MEMCACHED_SERVERS');
  const adminToken = setting(env, 'MEMGATE_ADMIN_TOKEN');
  // Never echo the token itself.
  if (adminToken !== undefined && adminToken.length < 16) throw new SettingsError('MEMGATE_ADMIN_TOKEN must be at least 16 characters');
  // A setting that was replaced must not be ignored in silence.
  if (setting(env, 'MEMGATE_FEATURE_CACHE_SIZE') !== undefined) {
    throw new SettingsError('MEMGATE_FEATURE_CACHE_SIZE was replaced by MEMGATE_CACHE_MB, one memory budget for every event (default 256; 0 keeps nothing)');
  }
  const username = setting(env, 'MEMCACHED_USERNAME');
  const password = env.MEMCACHED_PASSWORD;
  if ((username === undefined) !== (password === undefined || password === '')) {
    throw new SettingsError('MEMCACHED_USERNAME and MEMCACHED_PASSWORD go together: set both or neither');
  }
  const logLevel = setting(env, 'LOG_LEVEL') ?? DEFAULTS.logLevel;
  if (!LOG_LEVELS.includes(logLevel)) throw new SettingsError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(logLevel)})`);
  return {
    help: args.values.help ?? false,
    port: integer(env, 'PORT', DEFAULTS.port, 0, 65_535),
    host: setting(env, 'HOST') ?? DEFAULTS.host,
    configPath: args.values.config ?? setting(env, 'MEMGATE_CONFIG') ?? BUNDLED_POLICIES,
    ...(servers ? { memcachedServers: servers } : {}),
    ...(username !== undefined && password ? { memcachedCredentials: { username, password } } : {}),
    ...(adminToken === undefined ? {} : { adminToken }),
    memcachedTimeoutMs: integer(env, 'MEMCACHED_TIMEOUT_MS', DEFAULTS.memcachedTimeoutMs, 1, 60_000),
    memcachedMaxInFlight: integer(env, 'MEMCACHED_MAX_IN_FLIGHT', DEFAULTS.memcachedMaxInFlight, 1, 1_000_000),
    keyPrefix: setting(env, 'MEMGATE_KEY_PREFIX') ?? DEFAULTS.keyPrefix,
    logLevel,
    maxClockSkewMs: integer(env, 'MEMGATE_MAX_CLOCK_SKEW_MS', DEFAULTS.maxClockSkewMs, 0, 60_000),
    cacheMb: integer(env, 'MEMGATE_CACHE_MB', DEFAULTS.cacheMb, 0, 1_048_576),
    maxDenialCacheMs: integer(env, 'MEMGATE_MAX_DENIAL_CACHE_MS', DEFAULTS.maxDenialCacheMs, 0, 3_600_000),
    maxEventLoopDelayMs: integer(env, 'MEMGATE_MAX_EVENT_LOOP_DELAY_MS', DEFAULTS.maxEventLoopDelayMs, 0, 60_000),
    shutdownDrainMs: integer(env, 'MEMGATE_SHUTDOWN_DRAIN_MS', DEFAULTS.shutdownDrainMs, 0, 600_000),
  };
}

/** A variable's trimmed value; unset and empty both mean "use the default". */
function setting(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === '' ? undefined : value;
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const text = setting(env, name);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!/^[0-9]+$/.test(text) || value < min || value > max) {
    throw new SettingsError(`${name} must be a whole number from ${min} to ${max} (got ${JSON.stringify(text)})`);
  }
  return value;
}
