// Which setting an environment variable was meant to be. A misspelt setting is otherwise
// ignored in silence and its default used: `MEMCACHE_SERVERS` (one letter short) would leave
// the counters in one process, unshared. settings.ts refuses the variables this finds.
import leven from 'leven';

/** memgate's own prefixes: a variable with one of them is memgate's, known or not. */
const OWN_PREFIX = /^(?:MEMGATE|MEMCACHED)_/;
const PREFIXES = ['MEMGATE_', 'MEMCACHED_'] as const;

/**
 * Names people guess for the Memcached servers, which no edit distance leads from: they
 * mean MEMCACHED_SERVERS (and MEMCACHED_URL is not MEMGATE_URL, the client's setting).
 */
const SERVERS_GUESS = /^MEMCACHED?_(?:URLS?|HOSTS?|ADDR|ADDRESS(?:ES)?|SERVERS?|NODES?)$/;

/** Kubernetes' service links' names: `<SERVICE>_SERVICE_HOST`, `<SERVICE>_PORT`, … (links only with a tcp:// `<SERVICE>_PORT`). */
export const LINK_NAME =
  /^([A-Z][A-Z0-9_]*?)_(?:SERVICE_HOST|SERVICE_PORT(?:_[A-Z0-9_]+)?|PORT(?:_[0-9]+_(?:TCP|UDP|SCTP)(?:_PROTO|_PORT|_ADDR)?)?)$/;
/** The value Kubernetes gives `<SERVICE>_PORT` and `<SERVICE>_PORT_<n>_<PROTO>`. */
const LINK_VALUE = /^(?:tcp|udp|sctp):\/\/\S+$/;

type Env = Readonly<Record<string, string | undefined>>;

/**
 * The services whose links Kubernetes put in `env`, known by their values: a `<SERVICE>_PORT`
 * holding tcp://host:port. By name alone, `MEMGATE_PORT=9000` would pass for one, and
 * the port it meant (PORT) be ignored.
 */
export function linkedServices(env: Env): ReadonlySet<string> {
  const services = new Set<string>();
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || !LINK_VALUE.test(value)) continue;
    const service = /^([A-Z][A-Z0-9_]*?)_PORT(?:_[0-9]+_(?:TCP|UDP|SCTP))?$/.exec(name)?.[1];
    if (service !== undefined) services.add(service);
  }
  return services;
}

/** Whether `name` is a service link of one of `services` (linkedServices). */
export function isServiceLink(name: string, services: ReadonlySet<string>): boolean {
  const service = LINK_NAME.exec(name)?.[1];
  return service !== undefined && services.has(service);
}

/**
 * Whether `name` is `known` mistyped: within one edit for a name under 6 letters (HOME is not
 * HOST), two otherwise; two neighbouring letters swapped count as one edit.
 */
function mistyped(name: string, known: string): boolean {
  const most = name.length < 6 ? 1 : 2;
  // Names further apart in length are further apart in edits: every variable of the
  // environment is held against every setting, at each start, in the launcher and the service.
  if (Math.abs(name.length - known.length) > most) return false;
  return leven(name, known) <= most || (name.length === known.length && oneSwap(name, known));
}

function oneSwap(a: string, b: string): boolean {
  let first = 0;
  while (first < a.length && a[first] === b[first]) first++;
  return (
    first < a.length - 1 &&
    a[first] === b[first + 1] &&
    a[first + 1] === b[first] &&
    a.slice(first + 2) === b.slice(first + 2)
  );
}

export interface VariableNames {
  /** The names the service reads (its settings, envoyproxy/ratelimit's): what a mistake is told to write. */
  readonly settings: readonly string[];
  /** Whether a name is read though not suggested: other tools' (MEMGATE_URL), envoyproxy/ratelimit's, replaced ones. */
  readonly alsoKnown: (name: string) => boolean;
}

/** A variable that is no setting but looks like one, and the setting it meant (when one is clear). */
export interface Misnamed {
  readonly name: string;
  readonly meant: readonly string[];
}

/**
 * The variables of `env` that are a setting misspelt, or memgate's own but no setting: any
 * variable within two edits of a setting, a setting with memgate's prefix added, swapped or
 * left out (MEMGATE_PORT for PORT, MEMGATE_SERVERS for MEMCACHED_SERVERS, CACHE_MB for
 * MEMGATE_CACHE_MB), and every other MEMGATE_* or MEMCACHED_* variable. Kubernetes' service
 * links are let be.
 */
export function misnamedVariables(env: Env, names: VariableNames): Misnamed[] {
  const settings = new Set(names.settings);
  const links = linkedServices(env);
  const found: Misnamed[] = [];
  for (const name of Object.keys(env).sort()) {
    if (settings.has(name) || names.alsoKnown(name) || !/^[A-Z][A-Z0-9_]*$/.test(name) || isServiceLink(name, links)) continue;
    const meant = meantSettings(name, names.settings);
    if (meant.length > 0 || OWN_PREFIX.test(name)) found.push({ name, meant });
  }
  return found;
}

/** The settings `name` was meant to be, best guess first; none when nothing is close. */
function meantSettings(name: string, settings: readonly string[]): string[] {
  if (SERVERS_GUESS.test(name)) return ['MEMCACHED_SERVERS'];
  const own = PREFIXES.find((prefix) => name.startsWith(prefix));
  const bare = own === undefined ? name : name.slice(own.length);
  // The prefix added (MEMGATE_PORT), swapped (MEMGATE_SERVERS) or left out (CACHE_MB: only a
  // name of two words or more, as a lone SERVERS or PASSWORD may be some other program's).
  const prefixed = [bare, ...PREFIXES.map((prefix) => prefix + bare)].filter(
    (candidate) => candidate !== name && settings.includes(candidate),
  );
  if (prefixed.length > 0 && (own !== undefined || bare.includes('_'))) return prefixed;
  const close = settings.filter((setting) => mistyped(name, setting));
  return close.sort((a, b) => leven(name, a) - leven(name, b));
}
