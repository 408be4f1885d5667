// `memgate policies FILE`: validates a policy file, or an envoyproxy/ratelimit configuration,
// and prints what it costs Memcached, before you deploy it.
//   memgate policies config/policies.yaml
//   memgate policies envoy/ratelimit.yaml       (or a directory of them)
import { stat } from 'node:fs/promises';
import { isMap, parseDocument } from 'yaml';
import { formatPath } from '../config/document-order.js';
import { describeCalendarWindow } from '../config/calendar-window.js';
import { formatDuration } from '../config/duration.js';
import { textBoundsProblem } from '../config/policy-bounds.js';
import { FileReadError, readBoundedText } from '../config/policy-files.js';
import { ENVOY_UNIT_SECONDS, loadEnvoyConfig, type EnvoyDescriptor, type EnvoyDomain } from '../config/envoy-config.js';
import { SETTINGS, SettingsError } from '../config/settings.js';
import { fromUpstream } from '../config/upstream-env.js';
import { countedEnvoyLimits, type EnvoyLimitEvent } from '../config/envoy-events.js';
import { formatRate, parsePolicyText, PolicyError, PolicySet } from '../config/policies.js';
import { planEvents } from '../counting/plan.js';
import { policySizing } from '../counting/sizing.js';
import { EXIT, fileProblem, runCommand, type ExitCode } from './command-line.js';

const USAGE = `usage: memgate policies FILE

  FILE    a memgate policy file, YAML or JSON (JSON when it ends in .json); or an
          envoyproxy/ratelimit configuration: a YAML file whose top level has domain (and
          no events), or a directory of them (its .yaml and .yml files, as MEMGATE_ENVOY_CONFIG)

Prints each limit with the keys a check reads and the Memcached items an active feature
keeps (for an Envoy configuration, every descriptor of every domain, with the memgate
event its limit counts under), and exits 0; exits 1 listing every problem of an invalid
file, 2 when FILE cannot be read. A valid file's warnings (rules that never match where
they are used, such as an IPv6 address at a /gate that counts IPv6 clients by network)
are listed on standard error; it still exits 0, as the service still loads it.`;

/** Runs `memgate policies` on `args`, the arguments after its name. */
export function runPolicies(args: readonly string[]): void {
  runCommand(
    {
      name: 'policies',
      invocation: 'memgate policies',
      args,
      usage: USAGE,
      options: {},
      positionals: { min: 1, max: 1, name: 'FILE' },
    },
    async ({ positionals, fail }) => {
      const path = positionals[0] ?? fail('missing FILE');
      // As the service would read an Envoy folder: a domain in several files merged when its settings say so.
      const mergeDomains = (): boolean => {
        try {
          return SETTINGS.envoyMergeDomains.read({ ...process.env, ...fromUpstream(process.env).env });
        } catch (error) {
          if (error instanceof SettingsError) return fail(error.message);
          throw error;
        }
      };
      if (path === '-') fail('give a policy file by its path; standard input is not read');
      const found = await stat(path).catch((error: unknown) => fail(`cannot read ${path}: ${fileProblem(error)}`));
      if (found.isDirectory()) {
        const merge = mergeDomains();
        return listingProblems(() => checkEnvoyConfig(path, merge));
      }
      if (!found.isFile()) fail(`${path} is neither a file nor a directory`);
      const text = await readBoundedText(path).catch((error: unknown) =>
        fail(`cannot read ${path}: ${error instanceof FileReadError ? error.message : fileProblem(error)}`),
      );
      // Bounded before any parse, the sniffing one included.
      const unbounded = textBoundsProblem(text);
      if (unbounded !== undefined) fail(`${path}: ${unbounded}`);
      if (isEnvoyFile(text)) {
        const merge = mergeDomains();
        return listingProblems(() => checkEnvoyConfig(path, merge));
      }
      return listingProblems(() => {
        checkPolicyFile(text, path);
      });
    },
  );
}

/** The problems of an invalid file are this command's answer, not an error of its own: every one, as listed, exit 1. */
async function listingProblems(check: () => Promise<void> | void): Promise<ExitCode> {
  try {
    await check();
    return EXIT.ok;
  } catch (error) {
    if (!(error instanceof PolicyError)) throw error;
    console.error(error.message);
    return EXIT.failed;
  }
}

/**
 * envoyproxy/ratelimit's files name a domain at the top; memgate's have events. Told by
 * content, so that a file is checked as the service will read it, whatever its name.
 * A file too broken to have a top level is memgate's, whose reader says what is wrong.
 */
function isEnvoyFile(text: string): boolean {
  const top = parseDocument(text).contents;
  return isMap(top) && top.has('domain') && !top.has('events');
}

function checkPolicyFile(text: string, path: string): void {
  const policies = parsePolicyText(text, path);
  const sizing = policySizing(policies, planEvents(policies));
  const rows = [['event', 'limit', ...SIZING_HEADER]];
  for (const event of sizing.events) {
    for (const limit of event.limits)
      rows.push([event.event, `${limit.name} (${limit.limit})`, ...sizingCells(event, limit)]);
    for (const [tier, limits] of Object.entries(event.tiers ?? {}))
      for (const limit of limits)
        rows.push([`${event.event} tier ${tier}`, `${limit.name} (${limit.limit})`, ...sizingCells(event, limit)]);
    const clients = [
      ...(event.overrides
        ? [
            `${event.overrides.count} override${event.overrides.count === 1 ? '' : 's'}${event.overrides.lapsed > 0 ? ` (${event.overrides.lapsed} past their until)` : ''}`,
          ]
        : []),
      ...(event.allow !== undefined ? [`${event.allow} allowed`] : []),
      ...(event.deny !== undefined ? [`${event.deny} denied`] : []),
    ];
    if (clients.length > 0) rows.push([`  ${event.event}: clients: ${clients.join(', ')}`]);
    if (event.reservations)
      rows.push([
        `  ${event.event}: reservations live ${formatDuration(event.reservations.life)}; until then (and 2 s) the buckets of their second are read again by every check`,
      ]);
    const increments = `${event.incrementsPerCheck} increment${event.incrementsPerCheck === 1 ? '' : 's'}`;
    rows.push([
      event.algorithm === 'token-bucket'
        ? `  ${event.event}: one read and at most one compare-and-swap per check, 1 item per active feature`
        : `  ${event.event}: ${increments} and up to ${event.keysPerCheck.max} keys per check, ${event.itemsPerFeature} items per active feature`,
    ]);
  }
  const { warnings } = policies;
  console.log(
    `${path}: ${sizing.events.length} events, valid${warnings.length > 0 ? `, with ${warnings.length} warning${warnings.length === 1 ? '' : 's'}` : ''}\n`,
  );
  printTable(rows);
  // Loaded all the same by the service (which logs them too): on standard error, after the table.
  if (warnings.length > 0) console.error(`\nwarnings:\n${warnings.map((warning) => `  - ${warning}`).join('\n')}`);
}

type EventSizing = ReturnType<typeof policySizing>['events'][number];
type LimitSizing = EventSizing['limits'][number];

const SIZING_HEADER = ['algorithm', 'window', 'buckets', 'keys/check max', 'mean', 'items/feature'];

function sizingCells(event: EventSizing, limit: LimitSizing): string[] {
  return [
    'edge' in event ? `${event.algorithm}, ${event.edge} edge` : event.algorithm,
    limit.rate
      ? `${formatRate(limit.rate)}, burst ${limit.limit}`
      : limit.calendar
        ? describeCalendarWindow(limit.calendar)
        : formatDuration(limit.window),
    limit.rate ? 'one value (GCRA)' : limit.calendar ? 'one a period' : limit.bucketSizes.map(formatDuration).join(' '),
    String(limit.keysPerCheck.max),
    String(limit.keysPerCheck.mean),
    String(limit.itemsPerFeature),
  ];
}

/** Columns padded to their widest cell; a row of one cell is a line of its own, outside the columns. */
function printTable(rows: readonly (readonly string[])[]): void {
  const columns = rows.filter((row) => row.length > 1);
  const widths = rows[0]?.map((_, column) => Math.max(...columns.map((row) => row[column]?.length ?? 0))) ?? [];
  for (const row of rows)
    console.log(
      row.length === 1
        ? row[0]
        : row
            .map((cell, i) => cell.padEnd(widths[i] ?? 0))
            .join('  ')
            .trimEnd(),
    );
}

/** One descriptor of a configuration, where it is: its domain, the descriptors above it and its place in the file. */
interface DescriptorAt {
  readonly domain: EnvoyDomain;
  readonly descriptor: EnvoyDescriptor;
  readonly ancestors: readonly EnvoyDescriptor[];
  /** `['descriptors', '1', 'descriptors', '0']`, as the reader's problems name it. */
  readonly place: readonly string[];
}

/** Every descriptor, each before the ones nested in it, in the order of the files. */
function descriptorTree(domains: Iterable<EnvoyDomain>): DescriptorAt[] {
  const found: DescriptorAt[] = [];
  const walk = (
    domain: EnvoyDomain,
    level: Iterable<EnvoyDescriptor>,
    ancestors: readonly EnvoyDescriptor[],
    place: readonly string[],
  ) => {
    // A configuration that loaded has every descriptor of a list, so the map's order is the file's.
    [...level].forEach((descriptor, index) => {
      const at = [...place, 'descriptors', String(index)];
      found.push({ domain, descriptor, ancestors, place: at });
      walk(domain, descriptor.children.byKey.values(), [...ancestors, descriptor], at);
    });
  };
  for (const domain of domains) walk(domain, domain.descriptors.byKey.values(), [], []);
  return found;
}

async function checkEnvoyConfig(path: string, mergeDomains: boolean): Promise<void> {
  const config = await loadEnvoyConfig(path, { mergeDomains });
  const tree = descriptorTree(config.domains.values());
  const limitOf = new Map(countedEnvoyLimits(config).map((limit) => [limit.descriptor, limit]));
  const sizingOf = sizeEnvoyLimits(tree, limitOf, path);

  const rows = [['descriptor', 'limit', 'event', 'counters', ...SIZING_HEADER, 'notes']];
  for (const domain of config.domains.values()) {
    const descriptors = tree.filter((at) => at.domain === domain);
    rows.push([
      `domain "${domain.domain}" (${domain.source})${descriptors.length === 0 ? ': no descriptors, limits nothing' : ''}`,
    ]);
    for (const at of descriptors) {
      const limit = limitOf.get(at.descriptor);
      const sizing = limit && sizingOf.get(limit);
      rows.push([
        `  ${at.descriptor.path.join('.')}`,
        limitText(at.descriptor),
        limit?.policy.event ?? '-',
        limit ? countersOf(at) : '-',
        ...(sizing ? sizingCells(sizing, sizing.limits[0] as LimitSizing) : SIZING_HEADER.map(() => '')),
        notesOf(at.descriptor).join('; '),
      ]);
    }
  }
  const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;
  console.log(
    `${path}: ${count(config.domains.size, 'domain')}, ${count(tree.length, 'descriptor')}, ${limitOf.size} counted, valid\n`,
  );
  printTable(rows);
}

/**
 * Plans each counted limit apart, so that a limit that would read too many keys per check
 * is reported at its descriptor, as the reader's problems are, rather than at its event.
 */
function sizeEnvoyLimits(
  tree: readonly DescriptorAt[],
  limitOf: ReadonlyMap<EnvoyDescriptor, EnvoyLimitEvent>,
  source: string,
) {
  const sizing = new Map<EnvoyLimitEvent, EventSizing>();
  const problems: string[] = [];
  for (const at of tree) {
    const limit = limitOf.get(at.descriptor);
    if (!limit) continue;
    const policies = new PolicySet([limit.policy], source);
    try {
      const [event] = policySizing(policies, planEvents(policies)).events;
      if (event) sizing.set(limit, event);
    } catch (error) {
      if (!(error instanceof PolicyError)) throw error;
      const where = `${at.domain.source}: domain "${at.domain.domain}", descriptor ${at.descriptor.path.join('.')} (${formatPath(at.place)}), field rate_limit: `;
      // planEvents names the event's only limit; here the place is the descriptor's rate_limit.
      const planned = `event "${limit.policy.event}", field limits[0]: `;
      problems.push(
        ...error.problems.map(
          (problem) => where + (problem.startsWith(planned) ? problem.slice(planned.length) : problem),
        ),
      );
    }
  }
  if (problems.length > 0) throw new PolicyError(source, problems);
  return sizing;
}

function limitText(descriptor: EnvoyDescriptor): string {
  const limit = descriptor.rateLimit;
  if (!limit) return 'none';
  if (limit.unlimited) return 'unlimited';
  // A `window` replaces the unit's length; without one, the unit is the window.
  const per =
    limit.unit !== undefined && limit.window === ENVOY_UNIT_SECONDS[limit.unit]
      ? limit.unit
      : formatDuration(limit.window);
  return `${limit.requestsPerUnit} per ${per}`;
}

/**
 * What a counter of the limit is per: the request's values the match leaves free (those of
 * key-only descriptors, and of wildcards unless their values share one threshold).
 */
function countersOf({ descriptor, ancestors }: DescriptorAt): string {
  const free = [...ancestors, descriptor].filter(
    (d) => d.value === undefined || (d.value.includes('*') && !d.shareThreshold),
  );
  return free.length === 0 ? 'one' : `per ${free.map((d) => d.key).join(' × ')}`;
}

/** What an operator should know of a descriptor beyond its limit. */
function notesOf(descriptor: EnvoyDescriptor): string[] {
  const limit = descriptor.rateLimit;
  const nested = descriptor.children.byKey.size;
  const notes: string[] = [];
  if (!limit)
    notes.push(
      nested > 0 ? `no limit of its own: leads to ${nested} nested` : 'no limit: a request ending here is not limited',
    );
  else if (limit.unlimited) notes.push('answers OK, counts nothing');
  else if (limit.requestsPerUnit === 0) notes.push('denies every request, counts nothing');
  if (descriptor.shadowMode) notes.push('shadow mode: counted as if enforced, always answers OK');
  if (descriptor.quotaMode) notes.push('quota mode: over only when every quota descriptor of a call is');
  if (descriptor.shareThreshold) notes.push('matching values share one counter');
  if (limit?.name !== undefined) notes.push(`name "${limit.name}"`);
  if (limit && limit.replaces.length > 0)
    notes.push(`replaces ${limit.replaces.map((name) => `"${name}"`).join(', ')}`);
  return notes;
}
