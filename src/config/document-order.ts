// Where a place is in a parsed YAML or JSON document, so that a file's problems are listed in
// the order of what they are about and name where they are (policies.ts, envoy-config.ts).

/**
 * What memgate reads of a JSON schema error. Ajv's ErrorObject has this shape; it is written
 * out here so that the library's declarations never name ajv, which its package does not carry
 * (policy files are checked by a validator compiled ahead of time: policy-shape-validator.ts).
 */
export interface SchemaError {
  readonly instancePath: string;
  readonly schemaPath: string;
  readonly keyword: string;
  readonly params: Readonly<Record<string, unknown>>;
  readonly message?: string;
  /** Set on the errors of a propertyNames schema: the key it refused. */
  readonly propertyName?: string;
}

export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** A place as the indexes of its keys and items in the document; a missing key (a required one) goes last. */
export function rankIn(document: unknown, place: readonly string[]): number[] {
  const ranks: number[] = [];
  let value: unknown = document;
  for (const segment of place) {
    const record = asRecord(value);
    const index = Array.isArray(value) ? Number(segment) : record ? Object.keys(record).indexOf(segment) : -1;
    ranks.push(index === -1 ? Number.MAX_SAFE_INTEGER : index);
    value = Array.isArray(value) ? (value as unknown[])[Number(segment)] : record?.[segment];
  }
  return ranks;
}

/** Orders two ranks by the first index where they differ; 0 when one is the start of the other. */
export function compareRanks(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return (a[i] as number) - (b[i] as number);
  return 0;
}

/** A place as a reader writes it: `descriptors[0].rate_limit.unit`, `limits[0].window`. */
export function formatPath(path: readonly string[]): string {
  return path.map((segment, i) => (/^[0-9]+$/.test(segment) ? `[${segment}]` : `${i > 0 ? '.' : ''}${segment}`)).join('');
}

/** The value at a place of the document, if there is one. */
export function valueAt(document: unknown, path: readonly string[]): unknown {
  let value: unknown = document;
  for (const segment of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}

/** The path of the field a schema error is about (for a missing or unknown key, that key's). */
export function pathOf(error: SchemaError): string[] {
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (error.keyword === 'required') return [...path, String(error.params.missingProperty)];
  if (error.keyword === 'additionalProperties') return [...path, String(error.params.additionalProperty)];
  if (error.keyword === 'propertyNames') return [...path, String(error.params.propertyName)];
  return path;
}
