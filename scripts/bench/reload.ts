// What a reload of the largest policy file allowed costs the service while it serves: the
// slowest /check answer during the reloads, each reload's time, the service's peak RSS and
// its heap. The file: 20,000 overrides (the most a file may hold), 10,000 in each of two
// events, each with a limit of its own (no two plans alike), in YAML.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULTS } from '../../src/config/defaults.js';
import { MAX_CLIENT_RULES, MAX_CLIENT_RULES_PER_FILE } from '../../src/config/policy-schema.js';
import { startService } from './processes.js';
import { median, type Suite } from './suite.js';
import { probeWhile } from './usage-stall.js';

const TOKEN = 'bench-reload-token-0123456789';
const RELOADS = 6;
const PROBE_EVERY_MS = 10;

/** The largest file: `variant` moves every limit, so each reload changes every plan. */
export function largestPolicyFile(variant: number): string {
  const events = MAX_CLIENT_RULES_PER_FILE / MAX_CLIENT_RULES;
  // What the prober asks: never refused, whatever the reloads change.
  const lines = ['events:', '  probe:', '    limits: [{ limit: 1000000, window: 1m }]'];
  for (let event = 0; event < events; event++) {
    lines.push(
      `  api${event}:`,
      '    limits: [{ limit: 100, window: 1m }, { limit: 5000, window: 1d }]',
      '    overrides:',
    );
    for (let i = 0; i < MAX_CLIENT_RULES; i++) {
      lines.push(
        `      - { match: { feature: "user-${i}" }, limits: [{ limit: ${i + 1 + variant}, window: 1m }, { limit: ${10_000 + i}, window: 1d }] }`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

/** Resident memory now, and its peak since the process started, in MiB (Linux). */
function residentMiB(pid: number): { now: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return { now: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

/** The resident memory of the processes `pid` started (its policy parse), in MiB (Linux); 0 when none runs. */
function childrenMiB(pid: number): number {
  let children: string[];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  } catch {
    return 0;
  }
  let total = 0;
  for (const child of children) {
    try {
      total += residentMiB(Number(child)).now;
    } catch {
      // Ended while it was read.
    }
  }
  return total;
}

/** Nanoseconds the process's serving thread (its main thread) has waited on a run queue for a core (Linux schedstat). */
function waitedForCoreNs(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[1] ?? 0);
  } catch {
    return Number.NaN;
  }
}

/** The most a thread waited for a core within any `span` consecutive samples (ms), from its cumulative waits (ns). */
function longestWait(waitsNs: readonly number[], span: number): number {
  let most = 0;
  for (let i = span; i < waitsNs.length; i++)
    most = Math.max(most, ((waitsNs[i] as number) - (waitsNs[i - span] as number)) / 1e6);
  return most;
}

/** The heap used, in MiB, and the event loop's longest lag since the last scrape, in ms (prom-client resets it each scrape). */
async function scraped(url: URL): Promise<{ heapMiB: number; lagMaxMs: number }> {
  const text = await (await fetch(new URL('/metrics', url))).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? 0);
  return {
    heapMiB: value('nodejs_heap_size_used_bytes') / 1024 / 1024,
    lagMaxMs: value('nodejs_eventloop_lag_max_seconds') * 1000,
  };
}

export const reload: Suite = {
  name: 'reload',
  about: 'reloading the largest policy file allowed while /check is probed every 10 ms',
  estimateSeconds: () => 60,
  async run({ servers, progress, doing }) {
    const folder = mkdtempSync(join(tmpdir(), 'memgate-bench-reload-'));
    const path = join(folder, 'policies.yaml');
    try {
      writeFileSync(path, largestPolicyFile(0));
      const bytes = Buffer.byteLength(largestPolicyFile(0));
      doing('starting memgate on the largest policy file');
      const startedAt = performance.now();
      const service = await startService({
        MEMCACHED_SERVERS: servers,
        MEMGATE_CONFIG: path,
        MEMGATE_POLICY_WATCH: 'off',
        MEMGATE_ADMIN_TOKEN: TOKEN,
      });
      const startSeconds = (performance.now() - startedAt) / 1000;
      try {
        const heapBefore = (await scraped(service.url)).heapMiB;
        const reloadsMs: number[] = [];
        let rssPeak = 0;
        let parseRssPeak = 0;
        // Whether a slow probe was memgate's or the machine's: how long the serving thread sat
        // runnable without a core, the parse process, the prober and Memcached sharing them.
        const waitsNs: number[] = [];
        // And the prober's own: a probe it sent late while it waited is the machine's, not memgate's.
        const proberWaitsNs: number[] = [];
        let proberPid: number | undefined;
        const sampler = setInterval(() => {
          rssPeak = Math.max(rssPeak, residentMiB(service.pid).now);
          parseRssPeak = Math.max(parseRssPeak, childrenMiB(service.pid));
          waitsNs.push(waitedForCoreNs(service.pid));
          // Once it has ended (its answer read), there is nothing more to read.
          const proberWait = proberPid === undefined ? Number.NaN : waitedForCoreNs(proberPid);
          if (Number.isFinite(proberWait)) proberWaitsNs.push(proberWait);
        }, 20);
        // Written out before the probing: 2 MiB of text made meanwhile would be this
        // process's garbage, collected on the cores the service and the prober share.
        const variants = Array.from({ length: RELOADS }, (_, i) => largestPolicyFile(i + 1));
        doing(`reloading it ${RELOADS} times while /check is probed`);
        const probed = await probeWhile(
          new URL('/check?event=probe&feature=prober', service.url).href,
          PROBE_EVERY_MS,
          async () => {
            for (let i = 1; i <= RELOADS; i++) {
              writeFileSync(path, variants[i - 1] ?? '');
              const began = performance.now();
              const answer = await fetch(new URL('/admin/reload', service.url), {
                method: 'POST',
                headers: { authorization: `Bearer ${TOKEN}` },
              });
              if (answer.status !== 200) throw new Error(`reload answered ${answer.status}: ${await answer.text()}`);
              reloadsMs.push(performance.now() - began);
              progress(`reload ${i}: ${Math.round(reloadsMs.at(-1) ?? 0)} ms`);
            }
          },
          {
            onStarted: (pid) => {
              proberPid = pid;
            },
          },
        ).finally(() => {
          clearInterval(sampler);
        });
        const { heapMiB: heapAfter, lagMaxMs } = await scraped(service.url);
        const budget = DEFAULTS.cacheMb + 190;
        const rows = [
          [
            'policy file',
            `${(bytes / 1024 / 1024).toFixed(1)} MiB YAML, ${MAX_CLIENT_RULES_PER_FILE.toLocaleString('en-US')} overrides`,
          ],
          ['start, to listening', `${startSeconds.toFixed(1)} s`],
          ['reload, median (slowest)', `${Math.round(median(reloadsMs))} ms (${Math.round(Math.max(...reloadsMs))})`],
          [
            'slowest /check during the reloads, asked from another process',
            `${probed.slowestMs} ms, p99 ${probed.p99Ms} ms (${probed.probes} probes, one every ${PROBE_EVERY_MS} ms)`,
          ],
          [
            'the service’s longest event-loop lag during the reloads',
            `${Math.round(lagMaxMs)} ms (\`nodejs_eventloop_lag_max_seconds\`)`,
          ],
          [
            'the serving thread’s longest wait for a core, within 100 ms',
            Number.isNaN(waitsNs[0])
              ? 'not measured (no /proc schedstat)'
              : `${Math.round(longestWait(waitsNs, 5))} ms`,
          ],
          [
            'the prober’s own longest wait for a core, within 100 ms',
            proberWaitsNs.length === 0
              ? 'not measured (no /proc schedstat)'
              : `${Math.round(longestWait(proberWaitsNs, 5))} ms`,
          ],
          ['service heap used, before and after', `${Math.round(heapBefore)} MiB, ${Math.round(heapAfter)} MiB`],
          [
            'service RSS during the reloads, peak',
            `${Math.round(rssPeak)} MiB (budget ${budget} MiB: MEMGATE_CACHE_MB ${DEFAULTS.cacheMb} + 190)`,
          ],
          [
            'the parse process’s RSS, peak (apart from the service’s, ended after each load)',
            `${Math.round(parseRssPeak)} MiB (its heap limit ${DEFAULTS.policyParseHeapMb} MiB)`,
          ],
        ];
        const table = [
          '| reload of the largest file | measured |',
          '| :-- | :-- |',
          ...rows.map(([what, value]) => `| ${what} | ${value} |`),
        ].join('\n');
        return {
          markdown: `## Reloading the largest policy file\n\n\`npm run bench -- --suite reload\`: memgate as \`npm start\` runs it, on Memcached, started on a policy file of ${MAX_CLIENT_RULES_PER_FILE.toLocaleString('en-US')} overrides (10,000 in each of two events, each override a limit of its own) and reloaded ${RELOADS} times through \`/admin/reload\`, every reload changing every limit, while another process asks \`/check\` every ${PROBE_EVERY_MS} ms (after a second of warming up, not counted; each answer timed from when it was due). The files are parsed in a process of their own at a lower priority; what follows on the serving thread runs in slices of at most 5 ms (docs/operations.md, Changing policies).\n\n${table}\n`,
          summary: table,
        };
      } finally {
        await service.stop();
      }
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  },
};
