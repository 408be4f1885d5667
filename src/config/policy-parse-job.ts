/**
 * What the policy parse process runs (parse-apart.ts): the policy file's and the Envoy
 * files' texts parsed and validated into values a structured clone carries back (maps,
 * arrays, plain objects; the two classes are made again on the other side, and the
 * gateway section, whose matchers are functions, from its part of the document).
 *
 * The answer crosses in parts (parseMessages): the events without their long lists, then
 * the lists a few hundred items at a time, each sent when the serving thread asks for it.
 * A clone is read back in one go by the thread that receives it: the largest file's, whole,
 * held that thread 70 to 90 ms, every check waiting behind it.
 */
import { parseEnvoyTexts, type EnvoyConfig } from './envoy-config.js';
import { parsePolicies, parsePolicyDocument, PolicyError, type EventPolicy, type PolicySet } from './policies.js';
import { overrideShapes } from './policy-changes.js';

export interface ParseJob {
  readonly policies: { readonly text: string; readonly source: string };
  /** MEMGATE_ENVOY_CONFIG's files (name, text), and the file or folder it names. */
  readonly envoy?:
    | {
        readonly files: readonly (readonly [string, string])[];
        readonly source: string;
        /** A domain in several files is merged (MEMGATE_ENVOY_MERGE_DOMAINS). */
        readonly mergeDomains?: boolean;
      }
    | undefined;
}

export type ParseAnswer =
  | {
      readonly parsed: {
        readonly policies: Omit<PolicySet, 'gateway'>;
        /** The document's `gateway`, when the file has one: plain data, valid. */
        readonly gateway: unknown;
        readonly envoy: EnvoyConfig | undefined;
        /** Each event's overrides in words, for the reload's line (policy-changes.ts). */
        readonly overrideShapes: ReadonlyMap<string, ReadonlyMap<string, string>>;
      };
    }
  | { readonly invalid: { readonly source: string; readonly problems: readonly string[] } }
  | { readonly failed: string };

export function runParseJob(job: ParseJob): ParseAnswer {
  try {
    const document = parsePolicyDocument(job.policies.text, job.policies.source);
    const { events, source, gateway, warnings } = parsePolicies(document, job.policies.source);
    const envoy = job.envoy
      ? parseEnvoyTexts(job.envoy.files, job.envoy.source, { mergeDomains: job.envoy.mergeDomains ?? false })
      : undefined;
    const raw = gateway && (document as { gateway: unknown }).gateway;
    const overrideShapesOf = new Map([...events].map(([event, policy]) => [event, overrideShapes(policy)]));
    return { parsed: { policies: { events, source, warnings }, gateway: raw, envoy, overrideShapes: overrideShapesOf } };
  } catch (error) {
    if (error instanceof PolicyError) return { invalid: { source: error.source, problems: error.problems } };
    return { failed: error instanceof Error ? error.message : String(error) };
  }
}

/** The longest lists of an event policy, which cross in parts; `shapes` are its override words. */
export type PartField = 'overrides' | 'allow' | 'deny' | 'shapes';

/** What a parse answer is sent as, one message after another (see the module). */
export type ParseMessage =
  | {
      readonly head: {
        readonly source: string;
        readonly warnings: readonly string[];
        readonly gateway: unknown;
        readonly envoy: EnvoyConfig | undefined;
        /** Each event's policy, its long lists empty: their items follow in parts. */
        readonly events: readonly (readonly [string, EventPolicy])[];
      };
    }
  | { readonly part: { readonly event: string; readonly field: PartField; readonly items: readonly unknown[] } }
  | { readonly done: true }
  | { readonly invalid: { readonly source: string; readonly problems: readonly string[] } }
  | { readonly failed: string };

/** Items of a list per part: a few milliseconds to read back. */
const PART_ITEMS = 500;
const LISTS = ['overrides', 'allow', 'deny'] as const;

/** The messages a job's answer is sent as, in order; the job runs at the first. */
export function* parseMessages(job: ParseJob): Generator<ParseMessage, void> {
  const answer = runParseJob(job);
  if (!('parsed' in answer)) {
    yield answer;
    return;
  }
  const { policies, gateway, envoy, overrideShapes: shapesByEvent } = answer.parsed;
  const heads = [...policies.events].map(([event, policy]): [string, EventPolicy] => {
    const head: Record<string, unknown> = { ...policy };
    for (const field of LISTS) if (policy[field]) head[field] = [];
    return [event, head as unknown as EventPolicy];
  });
  yield { head: { source: policies.source, warnings: policies.warnings, gateway, envoy, events: heads } };
  for (const [event, policy] of policies.events) {
    const lists: [PartField, readonly unknown[]][] = LISTS.map((field) => [field, policy[field] ?? []]);
    lists.push(['shapes', [...(shapesByEvent.get(event) ?? [])]]);
    for (const [field, items] of lists)
      for (let at = 0; at < items.length; at += PART_ITEMS)
        yield { part: { event, field, items: items.slice(at, at + PART_ITEMS) } };
  }
  yield { done: true };
}
