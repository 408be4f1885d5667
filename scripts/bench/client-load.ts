// The callers of the client suite (client.ts): memgate/client driven in the bench process,
// as a service would use it, against a memgate process. Each run takes a client of its own
// and reports what the client, the caller's clock and memgate's /metrics saw.
import { createHistogram } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type * as ClientModule from '../../src/client/index.js';
import { featureSpread } from '../lib/run-load.js';
import { COMPILED_ENV } from './compiled.js';

type CreateClient = typeof ClientModule.createClient;
export type ClientOptions = Omit<ClientModule.ClientOptions, 'url'>;

/** memgate/client as the bench runs it: the built one after `npm run build` (see compiled.ts), else the source. */
export async function clientModule(): Promise<{ createClient: CreateClient }> {
  const root = process.env[COMPILED_ENV] === '1' ? '../../dist' : '../../src';
  return (await import(`${root}/client/index.js`)) as typeof ClientModule;
}

/** The checks memgate decided for `event` so far, by its own `memgate_decisions_total` (all kinds and outcomes). */
export async function decisionsCounted(url: URL, event: string): Promise<number> {
  const response = await fetch(new URL('/metrics', url));
  const text = await response.text();
  if (!response.ok) throw new Error(`${url.href}metrics answered ${response.status}: ${text.slice(0, 200)}`);
  const label = `event="${event}"`;
  return text
    .split('\n')
    .filter((line) => line.startsWith('memgate_decisions_total{') && line.includes(label))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

export interface DeniedRun {
  readonly checks: number;
  /** From the first burst's start to the last burst's end. */
  readonly seconds: number;
  /** Checks memgate decided, by the answers' `source`, and the HTTP requests the client sent. */
  readonly reached: { readonly allowed: number; readonly denied: number; readonly requests: number };
  readonly answeredLocally: number;
  /** The client's own count of checks it sent, and memgate's count of checks it decided. */
  readonly clientChecksSent: number;
  readonly memgateDecisions: number;
  /** The retryAfter of the denial that put the feature over its limit before the run. */
  readonly firstRetryAfter: number;
  /** Local answers a second, over the bursts every check of which was answered locally. */
  readonly localPerSecond: number;
}

/**
 * Puts one feature over its limit, then sends `checks` checks of it in bursts of `burst`
 * concurrent ones, the bursts spread evenly over `seconds` so that retryAfter periods pass.
 */
export async function deniedBursts({
  createClient,
  url,
  event,
  feature,
  checks,
  burst,
  seconds,
}: {
  createClient: CreateClient;
  url: URL;
  event: string;
  feature: string;
  checks: number;
  burst: number;
  seconds: number;
}): Promise<DeniedRun> {
  const client = createClient({ url });
  try {
    let first = await client.check(event, feature);
    // The limit is small: a few checks put the feature over it, unless memgate does not count.
    for (let tries = 1; first.allowed && !first.degraded && tries < 100; tries++)
      first = await client.check(event, feature);
    if (first.allowed || first.degraded || first.source !== 'server') {
      throw new Error(`memgate did not deny ${event} ${feature} (answered ${JSON.stringify(first)})`);
    }
    const before = { stats: client.stats, decisions: await decisionsCounted(url, event) };

    const bursts = Math.ceil(checks / burst);
    const everyMs = (seconds * 1000) / bursts;
    const reached = { allowed: 0, denied: 0 };
    let local = 0;
    let localOnlyChecks = 0;
    let localOnlyMs = 0;
    const started = performance.now();
    for (let index = 0; index < bursts; index++) {
      const due = started + index * everyMs;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const size = Math.min(burst, checks - index * burst);
      const burstStarted = performance.now();
      const decisions = await Promise.all(Array.from({ length: size }, () => client.check(event, feature)));
      const burstMs = performance.now() - burstStarted;
      let fromServer = 0;
      for (const decision of decisions) {
        if (decision.source === 'local') local++;
        else {
          fromServer++;
          if (decision.allowed) reached.allowed++;
          else reached.denied++;
        }
      }
      if (fromServer === 0) {
        localOnlyChecks += size;
        localOnlyMs += burstMs;
      }
    }
    const elapsed = (performance.now() - started) / 1000;
    const after = client.stats;
    return {
      checks,
      seconds: elapsed,
      reached: { ...reached, requests: after.requests - before.stats.requests },
      answeredLocally: local,
      clientChecksSent: after.checksSent - before.stats.checksSent,
      memgateDecisions: (await decisionsCounted(url, event)) - before.decisions,
      firstRetryAfter: first.retryAfter ?? 0,
      localPerSecond: localOnlyMs > 0 ? (1000 * localOnlyChecks) / localOnlyMs : 0,
    };
  } finally {
    await client.close();
  }
}

export interface CallersRun {
  readonly checks: number;
  readonly seconds: number;
  /** Per call, in the caller, milliseconds. */
  readonly latencyMs: { readonly p50: number; readonly p99: number };
  /** HTTP requests the client sent, and checks memgate decided by its /metrics (a lease is one). */
  readonly requests: number;
  readonly memgateDecisions: number;
  /** Answers that were not a plain allowed one: any is a sign the run measured something else. */
  readonly denied: number;
  readonly degraded: number;
  readonly leasesTaken: number;
  /** Lease returns memgate did not take (no answer within the client's timeout, or too late): their units stayed counted. */
  readonly leaseReturnsLost: number;
  /** The bench process's CPU over the run (the callers and the client), microseconds. */
  readonly callerCpuMicros: number;
}

/**
 * `callers` concurrent loops, each awaiting one check after another for `seconds`, of
 * features drawn uniformly from `features` names (seeded): each comes back, at random
 * times, so that leases get spent and do not all end together.
 */
export async function concurrentCallers({
  createClient,
  url,
  options,
  event,
  featurePrefix,
  features,
  seed,
  callers,
  seconds,
}: {
  createClient: CreateClient;
  url: URL;
  options: ClientOptions;
  event: string;
  featurePrefix: string;
  features: number;
  seed: number;
  callers: number;
  seconds: number;
}): Promise<CallersRun> {
  const client = createClient({ ...options, url });
  // Nanoseconds, which it records as integers.
  const latency = createHistogram();
  const nextFeature = featureSpread(`uniform:${features}`, seed);
  let checks = 0;
  let denied = 0;
  let degraded = 0;
  const decisionsBefore = await decisionsCounted(url, event);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const end = started + seconds * 1000;
  const caller = async () => {
    while (performance.now() < end) {
      const feature = `${featurePrefix}${nextFeature()}`;
      const callStarted = performance.now();
      const decision = await client.check(event, feature);
      latency.record(Math.max(1, Math.round((performance.now() - callStarted) * 1e6)));
      checks++;
      if (!decision.allowed) denied++;
      if (decision.degraded) degraded++;
    }
  };
  let elapsed: number;
  try {
    await Promise.all(Array.from({ length: callers }, caller));
    elapsed = (performance.now() - started) / 1000;
  } finally {
    // Closing returns the leases still held: part of what they cost, as every lease is returned once.
    await client.close();
  }
  const cpu = process.cpuUsage(cpuBefore);
  const stats = client.stats;
  return {
    checks,
    seconds: elapsed,
    latencyMs: { p50: latency.percentile(50) / 1e6, p99: latency.percentile(99) / 1e6 },
    requests: stats.requests,
    memgateDecisions: (await decisionsCounted(url, event)) - decisionsBefore,
    denied,
    degraded,
    leasesTaken: stats.leasesTaken,
    leaseReturnsLost: stats.leaseReturnsLost,
    callerCpuMicros: cpu.user + cpu.system,
  };
}
