import { readdir, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { isScalar, parseDocument, visit } from 'yaml';
import { AJV_CODE_OPTIONS } from './defaults.js';
import { asRecord, compareRanks, formatPath, pathOf, rankIn, valueAt } from './document-order.js';
import { CALENDAR_NOMINAL_SECONDS, calendarWindowOf, type CalendarWindow } from './calendar-window.js';
import { formatDuration, parseDuration } from './duration.js';
import { textBoundsProblem } from './policy-bounds.js';
import { readBoundedText } from './policy-files.js';
import { PolicyError, reservationPolicyOf, type Algorithm, type OnStoreError, type ReservationPolicy } from './policies.js';
import {
  ENVOY_UNIT_SECONDS,
  EnvoyConfig,
  MAX_REQUESTS_PER_UNIT,
  RESERVATION_ENTRY,
  type DescriptorLevel,
  type EnvoyAlgorithm,
  type EnvoyDescriptor,
  type EnvoyDomain,
  type EnvoyRateLimit,
  type EnvoyUnit,
} from './envoy-model.js';

// The model is the readers' as much as the limiter's: they take it from here with the reading.
export * from './envoy-model.js';

/**
 * envoyproxy/ratelimit's configuration files (https://github.com/envoyproxy/ratelimit,
 * README "Configuration", src/config/config_impl.go), read as that project reads them,
 * plus memgate's opt-in extensions on a rate_limit: window, algorithm, granularity, calendar,
 * onStoreError and reservations. Matching a request's descriptor against them is in envoy-match.ts.
 */
const ALGORITHMS: readonly EnvoyAlgorithm[] = ['fixed', 'sliding'];
const ON_STORE_ERROR: readonly OnStoreError[] = ['allow', 'deny'];
const duration = { type: ['string', 'integer'] } as const;

/** The keys envoyproxy/ratelimit accepts (its validKeys), where it accepts them, and memgate's extensions. */
export const envoyFileSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'envoyproxy/ratelimit configuration file',
  type: 'object',
  additionalProperties: false,
  required: ['domain'],
  properties: {
    domain: { type: 'string' },
    descriptors: { type: ['array', 'null'], items: { $ref: '#/definitions/descriptor' } },
  },
  definitions: {
    descriptor: {
      type: 'object',
      additionalProperties: false,
      required: ['key'],
      properties: {
        key: { type: 'string' },
        value: { type: ['string', 'null'] },
        rate_limit: {
          type: 'object',
          additionalProperties: false,
          properties: {
            name: { type: 'string' },
            replaces: { type: 'array', items: { type: 'object', additionalProperties: false, properties: { name: { type: 'string' } } } },
            unit: { type: 'string' },
            requests_per_unit: { type: 'integer', minimum: 0, maximum: MAX_REQUESTS_PER_UNIT },
            unlimited: { type: 'boolean' },
            window: duration,
            algorithm: { enum: ALGORITHMS },
            granularity: duration,
            onStoreError: { enum: ON_STORE_ERROR },
            calendar: {
              type: 'object',
              additionalProperties: false,
              description: 'a day, week or month of a time zone instead of an epoch-aligned span (memgate extension)',
              properties: { timezone: { type: 'string', maxLength: 64 }, anchor: { type: ['integer', 'string'] } },
            },
            reservations: {
              type: 'object',
              additionalProperties: false,
              description: 'hits_addend reserves; a call carrying memgate_reservation settles (memgate extension)',
              properties: { life: duration },
            },
          },
        },
        shadow_mode: { type: 'boolean' },
        quota_mode: { type: 'boolean' },
        detailed_metric: { type: 'boolean' },
        value_to_metric: { type: 'boolean' },
        share_threshold: { type: 'boolean' },
        metadata: { type: 'object' },
        descriptors: { type: ['array', 'null'], items: { $ref: '#/definitions/descriptor' } },
      },
    },
  },
} as const;

/**
 * The file's shape check, compiled when a file is first read (about 35 ms): a service without
 * an Envoy file need not pay for it at every start.
 */
let validateShape: ValidateFunction | undefined;
const shapeValidator = (): ValidateFunction =>
  (validateShape ??= new Ajv({ allErrors: true, allowUnionTypes: true, code: AJV_CODE_OPTIONS }).compile(envoyFileSchema));

const DURATION_HINT = 'must be a positive whole duration like 30s, 5m, 1h, 1d or a number of seconds';
const UNITS = Object.keys(ENVOY_UNIT_SECONDS) as EnvoyUnit[];

/**
 * Collects the faults of one file and says where each is: the file, the domain, the
 * descriptor (its composite path and its place in the file) and the field.
 */
class Reporter {
  private readonly found: { place: readonly string[]; text: string }[] = [];
  private document: unknown;
  constructor(readonly file: string) {}

  read(document: unknown): void {
    this.document = document;
  }

  at(place: readonly string[], text: string): void {
    this.found.push({ place, text });
  }

  get count(): number {
    return this.found.length;
  }

  /** One line per fault, in the order of what they are about in the file. */
  lines(): string[] {
    const domain = asRecord(this.document)?.domain;
    const label = typeof domain === 'string' && domain !== '' ? `domain "${domain}", ` : '';
    return this.found
      .map((problem) => ({ problem, rank: rankIn(this.document, problem.place) }))
      // Stable: several faults of one place keep the order they were found in; a place comes before its fields.
      .sort((a, b) => compareRanks(a.rank, b.rank) || a.rank.length - b.rank.length)
      .map(({ problem }) => `${this.file}: ${problem.place.length > 0 ? label : ''}${this.where(problem.place)}${problem.text}`);
  }

  private where(place: readonly string[]): string {
    if (place.length === 0) return '';
    let value: unknown = this.document;
    const names: string[] = [];
    let descriptorEnd = 0;
    place.forEach((segment, i) => {
      value = Array.isArray(value) ? (value as unknown[])[Number(segment)] : asRecord(value)?.[segment];
      if (place[i - 1] === 'descriptors' && /^[0-9]+$/.test(segment)) {
        names.push(compositeKeyOf(asRecord(value)));
        descriptorEnd = i + 1;
      }
    });
    const field = place.slice(descriptorEnd);
    const descriptor = descriptorEnd > 0 ? `descriptor ${names.join('.')} (${formatPath(place.slice(0, descriptorEnd))})` : '';
    const fieldText = field.length > 0 ? `field ${formatPath(field)}` : '';
    return `${[descriptor, fieldText].filter(Boolean).join(', ')}: `;
  }
}

function compositeKeyOf(raw: Record<string, unknown> | undefined): string {
  const key = typeof raw?.key === 'string' && raw.key !== '' ? raw.key : '?';
  return typeof raw?.value === 'string' && raw.value !== '' ? `${key}_${raw.value}` : key;
}


/**
 * Validates one parsed file (its object form). Every fault is reported, each with the file,
 * domain and descriptor it is in; faults the schema finds are not checked again.
 */
function parseDomain(document: unknown, file: string, report: Reporter): EnvoyDomain | undefined {
  report.read(document);
  const root = asRecord(document);
  const domain = typeof root?.domain === 'string' ? root.domain : undefined;
  const validate = shapeValidator();
  const shapeErrors = validate(document) ? [] : (validate.errors ?? []);
  for (const error of shapeErrors) report.at(pathOf(error), describeSchemaError(error, document));
  const refused = shapeErrors.map((error) => pathOf(error).join('/'));
  const sound = (path: readonly string[]) => {
    const at = path.join('/');
    return !refused.some((p) => p === at || p.startsWith(`${at}/`));
  };
  if (domain === '') report.at(['domain'], 'must not be empty: every file names its domain');
  const descriptors = parseLevel(root?.descriptors, {
    domain,
    place: ['descriptors'],
    path: [],
    sound,
    report: (place, text) => {
      report.at(place, text);
    },
  });
  if (report.count > 0 || !domain || !descriptors) return undefined;
  return { domain, source: file, descriptors };
}

interface LevelContext {
  readonly domain: string | undefined;
  /** Where the level's list is in the document: `['descriptors', '0', 'descriptors']`. */
  readonly place: readonly string[];
  /** Composite keys of the descriptors above. */
  readonly path: readonly string[];
  readonly sound: (place: readonly string[]) => boolean;
  readonly report: (place: readonly string[], text: string) => void;
}

function parseLevel(raw: unknown, context: LevelContext): DescriptorLevel | undefined {
  const byKey = new Map<string, EnvoyDescriptor>();
  const wildcards: { compositeKey: string; parts: string[] }[] = [];
  // Every composite key of the level, also of descriptors refused for other faults.
  const claimed = new Map<string, number>();
  if (raw === undefined || raw === null) return { byKey, wildcards };
  if (!Array.isArray(raw)) return undefined;
  let complete = true;
  for (const [index, item] of (raw as unknown[]).entries()) {
    const place = [...context.place, String(index)];
    const descriptor = parseDescriptor(asRecord(item), { ...context, place }, (compositeKey) => {
      const first = claimed.get(compositeKey);
      if (first !== undefined) {
        context.report(place, `duplicate: same key and value as item ${first} of this list; give each one limit`);
        return false;
      }
      claimed.set(compositeKey, index);
      return true;
    });
    if (!descriptor) {
      complete = false;
      continue;
    }
    byKey.set(descriptor.compositeKey, descriptor);
    if (descriptor.compositeKey.includes('*')) wildcards.push({ compositeKey: descriptor.compositeKey, parts: descriptor.compositeKey.split('*') });
  }
  return complete ? { byKey, wildcards } : undefined;
}

function parseDescriptor(
  raw: Record<string, unknown> | undefined,
  context: LevelContext,
  claim: (compositeKey: string) => boolean,
): EnvoyDescriptor | undefined {
  const { place, report, sound } = context;
  if (!raw) return undefined;
  const key = sound([...place, 'key']) ? (raw.key as string | undefined) : undefined;
  const value = sound([...place, 'value']) ? ((raw.value as string | null | undefined) ?? '') : undefined;
  if (key === '') report([...place, 'key'], 'must not be empty: every descriptor has a key');
  if (key === RESERVATION_ENTRY) report([...place, 'key'], `"${RESERVATION_ENTRY}" names the reservation a call settles (see docs/envoy.md); no descriptor can have it as its key`);
  // As envoyproxy/ratelimit: an empty value is no value.
  const compositeKey = key && value !== undefined ? (value === '' ? key : `${key}_${value}`) : undefined;
  const claimed = compositeKey !== undefined && claim(compositeKey);
  const path = [...context.path, compositeKey ?? '?'];
  const flag = (name: string) => (sound([...place, name]) ? raw[name] === true : false);
  const shareThreshold = flag('share_threshold');
  if (shareThreshold && compositeKey !== undefined && !compositeKey.includes('*')) {
    report([...place, 'share_threshold'], `applies to wildcard values (containing "*") only; "${compositeKey}" has none`);
  }
  const rateLimit = raw.rate_limit !== undefined ? parseRateLimit(asRecord(raw.rate_limit), [...place, 'rate_limit'], context) : undefined;
  const children = parseLevel(raw.descriptors, { ...context, place: [...place, 'descriptors'], path });
  if (!claimed || !compositeKey || key === undefined || value === undefined || rateLimit === null || !children) return undefined;
  const metadata = asRecord(raw.metadata);
  return {
    key,
    ...(value === '' ? {} : { value }),
    compositeKey,
    path,
    ...(rateLimit ? { rateLimit } : {}),
    shadowMode: flag('shadow_mode'),
    quotaMode: flag('quota_mode'),
    detailedMetric: flag('detailed_metric'),
    valueToMetric: flag('value_to_metric'),
    shareThreshold,
    ...(metadata ? { metadata } : {}),
    children,
  };
}

/** A descriptor's rate_limit, or null when it is faulty. */
function parseRateLimit(raw: Record<string, unknown> | undefined, place: readonly string[], context: LevelContext): EnvoyRateLimit | null {
  const { report, sound } = context;
  if (!raw) return null;
  // Fields the schema refused are not checked again; the others still are, so every fault shows at once.
  const shapeSound = sound(place);
  const field = (...names: string[]) => [...place, ...names];
  const faults = { count: 0 };
  const fault = (name: string | readonly string[], text: string) => {
    report(typeof name === 'string' ? field(name) : field(...name), text);
    faults.count++;
  };
  const unlimited = raw.unlimited === true;
  const name = sound(field('name')) ? (raw.name as string | undefined) : undefined;
  const rawUnit = sound(field('unit')) ? (raw.unit as string | undefined) : undefined;
  // envoyproxy/ratelimit compares units in upper case, so `Minute` and `MINUTE` are minutes.
  const unit = rawUnit === undefined ? undefined : UNITS.find((u) => u === rawUnit.toLowerCase());
  if (rawUnit !== undefined && unit === undefined && !unlimited) fault('unit', `must be one of ${UNITS.join(', ')} (got ${JSON.stringify(rawUnit)})`);
  const replaces = Array.isArray(raw.replaces) && sound(field('replaces')) ? (raw.replaces as { name?: string }[]).map((r) => r.name ?? '') : [];
  replaces.forEach((replaced, index) => {
    if (replaced === '') fault(['replaces', String(index)], 'must name the limit it replaces (a name)');
    else if (replaced === name) fault(['replaces', String(index)], `"${replaced}" is this limit's own name; a limit cannot replace itself`);
  });
  if (unlimited) {
    for (const extension of ['unit', 'window', 'algorithm', 'granularity', 'calendar', 'reservations'] as const) {
      if (raw[extension] !== undefined) fault(extension, 'must not be set when unlimited is true: an unlimited descriptor counts nothing');
    }
    if (faults.count > 0 || !shapeSound) return null;
    return { ...(name === undefined ? {} : { name }), replaces, unlimited, requestsPerUnit: 0, window: 0, algorithm: 'fixed', granularity: 0, onStoreError: onStoreErrorOf(raw) };
  }
  let window: number | undefined = unit === undefined ? undefined : ENVOY_UNIT_SECONDS[unit];
  if (raw.window !== undefined && sound(field('window'))) {
    window = parseDuration(raw.window);
    if (window === undefined) fault('window', `${DURATION_HINT} (got ${JSON.stringify(raw.window)})`);
  } else if (raw.unit === undefined) {
    fault('unit', `missing: give a unit (${UNITS.join(', ')}), a window, or unlimited: true`);
  }
  // envoyproxy/ratelimit reads a missing requests_per_unit as 0, a limit that denies everything: refused here as a likely slip.
  if (raw.requests_per_unit === undefined) fault('requests_per_unit', 'missing: give the number of requests per unit (0 denies every request)');
  const algorithm = (sound(field('algorithm')) ? (raw.algorithm as EnvoyAlgorithm | undefined) : undefined) ?? 'fixed';
  let granularity = window;
  if (raw.granularity !== undefined && sound(field('granularity'))) {
    if (algorithm === 'fixed') fault('granularity', 'applies to sliding windows only (algorithm: sliding); a fixed window is one counter');
    else {
      granularity = parseDuration(raw.granularity);
      if (granularity === undefined) fault('granularity', `${DURATION_HINT} (got ${JSON.stringify(raw.granularity)})`);
    }
  } else if (algorithm === 'sliding') {
    granularity = 1;
  }
  if (window !== undefined && granularity !== undefined && window % granularity !== 0) {
    fault('window', `${formatDuration(window)} is not a multiple of the granularity ${formatDuration(granularity)}`);
  }
  const calendar = raw.calendar !== undefined && sound(field('calendar')) ? calendarOf(raw, unit, algorithm, fault) : undefined;
  if (calendar) window = granularity = CALENDAR_NOMINAL_SECONDS[calendar.unit];
  const reservations =
    raw.reservations !== undefined && sound(field('reservations')) && window !== undefined
      ? reservationsOf(asRecord(raw.reservations) ?? {}, window, fault)
      : undefined;
  if (faults.count > 0 || !shapeSound || window === undefined || granularity === undefined || calendar === null || reservations === null) return null;
  return {
    ...(calendar ? { calendar } : {}),
    ...(reservations ? { reservations } : {}),
    ...(name === undefined ? {} : { name }),
    replaces,
    unlimited,
    ...(unit === undefined ? {} : { unit }),
    requestsPerUnit: raw.requests_per_unit as number,
    window,
    algorithm,
    granularity,
    onStoreError: onStoreErrorOf(raw),
  };
}

/**
 * A rate_limit's `calendar:` section: its unit's periods in a time zone (undefined for a UTC
 * day, the aligned day it already is), or null when faulty.
 */
function calendarOf(
  raw: Record<string, unknown>,
  unit: EnvoyUnit | undefined,
  algorithm: Algorithm,
  fault: (name: string | readonly string[], text: string) => void,
): CalendarWindow | undefined | null {
  if (unit !== 'day' && unit !== 'week' && unit !== 'month') {
    fault('calendar', `applies to unit day, week or month (got ${unit === undefined ? 'no unit' : `unit ${unit}`})`);
    return null;
  }
  if (raw.window !== undefined) {
    fault('calendar', 'takes its length from the unit: drop window');
    return null;
  }
  if (algorithm !== 'fixed') {
    fault('calendar', 'counts fixed windows: drop algorithm: sliding');
    return null;
  }
  const fields = asRecord(raw.calendar) ?? {};
  return calendarWindowOf(unit, { anchor: fields.anchor, timezone: fields.timezone }, (name, text) => { fault(['calendar', name], text); },
  );
}

/** A rate_limit's `reservations:` section, or null when faulty: the rule of a policy file's, for the limit's one window. */
function reservationsOf(
  raw: Record<string, unknown>,
  window: number,
  fault: (name: string | readonly string[], text: string) => void,
): ReservationPolicy | null {
  return reservationPolicyOf(raw.life, window, 'the window', (field, text) => { fault(field === 'life' ? ['reservations', 'life'] : 'reservations', text); },
  );
}

function onStoreErrorOf(raw: Record<string, unknown>): OnStoreError {
  return ON_STORE_ERROR.includes(raw.onStoreError as OnStoreError) ? (raw.onStoreError as OnStoreError) : 'allow';
}

/** Fields envoyproxy/ratelimit reads into Go strings, which take any scalar as written. */
const STRING_FIELDS = new Set(['domain', 'key', 'value', 'name']);

/**
 * Parses the text of one file. Keys and values that YAML reads as numbers or booleans
 * (`value: 404`, `value: yes`) are kept as written, as envoyproxy/ratelimit's string fields
 * take them; a key given twice in one mapping is a fault.
 */
function parseFileText(text: string, file: string, report: Reporter): EnvoyDomain | undefined {
  const unbounded = textBoundsProblem(text);
  if (unbounded !== undefined) {
    report.at([], unbounded);
    return undefined;
  }
  const document = parseDocument(text, { uniqueKeys: true, prettyErrors: false });
  if (document.errors.length > 0) {
    for (const error of document.errors) report.at([], `not valid YAML: ${error.message.split('\n')[0]}`);
    return undefined;
  }
  visit(document, {
    Pair(_, pair) {
      if (isScalar(pair.key) && STRING_FIELDS.has(pair.key.value as string) && isScalar(pair.value)) {
        const scalar = pair.value;
        if (scalar.value !== null && typeof scalar.value !== 'string') scalar.value = scalar.source ?? JSON.stringify(scalar.value);
      }
    },
  });
  return parseDomain(document.toJS(), file, report);
}

export interface EnvoyParseOptions {
  /**
   * A domain in several files is one domain, their descriptors together, as envoyproxy/ratelimit
   * reads them with MERGE_DOMAIN_CONFIG=true; a descriptor two of them define is still refused.
   * Without it, a domain belongs to one file.
   */
  readonly mergeDomains?: boolean;
}

/** Validates the files given as text (name → content): a domain in two files is refused, or merged. */
export function parseEnvoyTexts(
  files: Iterable<readonly [string, string]>,
  source: string,
  { mergeDomains = false }: EnvoyParseOptions = {},
): EnvoyConfig {
  const problems: string[] = [];
  const domains = new Map<string, EnvoyDomain>();
  for (const [file, text] of files) {
    const report = new Reporter(file);
    const domain = parseFileText(text, file, report);
    problems.push(...report.lines());
    if (!domain) continue;
    const earlier = domains.get(domain.domain);
    if (!earlier) domains.set(domain.domain, domain);
    else if (mergeDomains) domains.set(domain.domain, mergedDomain(earlier, domain, problems));
    else {
      problems.push(
        `${file}: domain "${domain.domain}" is already defined in ${earlier.source}; each domain belongs to one file (MEMGATE_ENVOY_MERGE_DOMAINS=on, upstream's MERGE_DOMAIN_CONFIG=true, merges them)`,
      );
    }
  }
  if (problems.length > 0) throw new PolicyError(source, problems);
  return new EnvoyConfig(domains.values(), source);
}

/** `later`'s top descriptors added to `earlier`'s, as upstream patches a domain; a key both define is a problem. */
function mergedDomain(earlier: EnvoyDomain, later: EnvoyDomain, problems: string[]): EnvoyDomain {
  const byKey = new Map(earlier.descriptors.byKey);
  for (const [key, descriptor] of later.descriptors.byKey) {
    if (byKey.has(key)) {
      problems.push(
        `${later.source}: domain "${later.domain}": descriptor "${key}" is already defined in ${earlier.source}; a merged domain takes each descriptor once`,
      );
    } else byKey.set(key, descriptor);
  }
  const wildcards = [...earlier.descriptors.wildcards, ...later.descriptors.wildcards];
  return { domain: earlier.domain, source: earlier.source, descriptors: { byKey, wildcards } };
}

/**
 * Reads one file, or every .yaml and .yml file of a directory (not its subdirectories,
 * nor dot files), in name order.
 */
export async function loadEnvoyConfig(path: string, options: EnvoyParseOptions = {}): Promise<EnvoyConfig> {
  return parseEnvoyTexts(await readEnvoyFiles(path), path, options);
}

/** The files of MEMGATE_ENVOY_CONFIG (a file, or a directory's .yaml and .yml files, sorted) with their texts. */
export async function readEnvoyFiles(path: string): Promise<[string, string][]> {
  let files: string[];
  try {
    const info = await stat(path);
    files = info.isDirectory()
      ? (await readdir(path))
          .filter((name) => !name.startsWith('.') && ['.yaml', '.yml'].includes(extname(name).toLowerCase()))
          .sort()
          .map((name) => join(path, name))
      : [path];
  } catch (error) {
    throw new PolicyError(path, [`cannot read: ${(error as Error).message}`]);
  }
  if (files.length === 0) throw new PolicyError(path, ['holds no .yaml or .yml file']);
  const texts: [string, string][] = [];
  const unreadable: string[] = [];
  for (const file of files) {
    try {
      texts.push([file, await readBoundedText(file)]);
    } catch (error) {
      unreadable.push(`${file}: ${(error as Error).message}`);
    }
  }
  if (unreadable.length > 0) throw new PolicyError(path, unreadable);
  return texts;
}


function describeSchemaError(error: ErrorObject, document: unknown): string {
  const got = JSON.stringify(valueAt(document, pathOf(error)));
  switch (error.keyword) {
    case 'additionalProperties':
      return `unknown key "${String(error.params.additionalProperty)}"`;
    case 'required':
      return 'missing';
    case 'enum':
      return `must be one of ${(error.params.allowedValues as unknown[]).join(', ')} (got ${got})`;
    case 'type':
      return `must be ${String(error.params.type).replace(',null', '').replace('string,integer', 'a duration')} (got ${got})`;
    default:
      return `${error.message ?? 'is invalid'} (got ${got})`;
  }
}



