/**
 * A policy file's YAML text as plain data. js-yaml builds the values straight from the text:
 * about ten times faster than the `yaml` package's document model, in a quarter of the memory
 * (the largest file allowed: 0.3 s and 65 MiB against 3 to 3.6 s and 290 MiB), which on a
 * reload is the difference between a parse that takes a core and collects garbage for
 * seconds, slowing the checks beside it, and one that does not. YAML 1.2's core schema, as
 * the `yaml` package reads it: no timestamps (`until` stays the text it was), no merge keys,
 * duplicate keys refused. Aliases are shared values: what they expand to is bounded like the
 * text's own values (policy-bounds.ts), so a few lines of aliases cannot stand for billions.
 */
import { CORE_SCHEMA, load, YAMLException } from 'js-yaml';
import { DEFAULTS } from './defaults.js';

/** Why `text` is not valid YAML, as an editor shows it: the reason at a line and column. */
export class YamlTextError extends Error {}

/** Parses one YAML document; an empty one (or only comments) is null. Throws YamlTextError. */
export function parseYamlText(text: string, maxValues: number = DEFAULTS.policyFileMaxValues): unknown {
  let value: unknown;
  try {
    value = load(text, { schema: CORE_SCHEMA, maxDepth: DEFAULTS.policyFileMaxDepth + 1 });
  } catch (error) {
    if (!(error instanceof YAMLException)) throw error;
    if (error.reason.includes('input is empty')) return null;
    const at = error.mark ? ` at line ${error.mark.line + 1}, column ${error.mark.column + 1}` : '';
    throw new YamlTextError(`${error.reason}${at}`);
  }
  if (text.includes('*') && expandedValues(value, maxValues) > maxValues)
    throw new YamlTextError(`its aliases expand to more than ${maxValues} values`);
  return value;
}

/** How many values `value` holds with every alias expanded, counted once per shared value (stops past `most`). */
function expandedValues(value: unknown, most: number): number {
  const sizes = new Map<object, number>();
  const size = (node: unknown): number => {
    if (node === null || typeof node !== 'object') return 1;
    const known = sizes.get(node);
    if (known !== undefined) return known;
    let total = 1;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      total += size(child);
      if (total > most) break;
    }
    sizes.set(node, total);
    return total;
  };
  return size(value);
}
