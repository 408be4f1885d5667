// The largest requests memgate refuses, sent in a flood by one client, while another checks
// /check at a steady pace: what each flood costs the service per request, and how far it moves
// the checker's latency. Issue 24: refused before the bulk of the work, so /check's p99 moves
// by less than 2x.
import { execFile, fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { markdownTable } from 'markdown-table';
import { Agent, request } from 'undici';
import { FLOOD_PER_SECOND, type FloodOrder, type SenderMessage } from './oversized-floods.js';
import { cpuMicros, startGrpcService, type Measured } from './processes.js';
import { median, verdict, type Suite } from './suite.js';

/** How far a flood may move /check's p99 (issue 24). */
const P99_AT_MOST = 2;
/** The checker's pace. */
const PROBE_EVERY_MS = 10;

/** Cases of the table: no flood, then each flood. */
const FLOOD_COUNT = 6;

interface FloodCase {
  readonly index: number;
  readonly name: string;
  readonly answer: string;
}

/** GET /check every PROBE_EVERY_MS until `until` resolves; each answer's latency in ms. */
async function probe(service: Measured, until: Promise<unknown>): Promise<number[]> {
  const agent = new Agent({ connections: 1 });
  const latencies: number[] = [];
  const state = { done: false };
  void until.finally(() => {
    state.done = true;
  });
  try {
    let i = 0;
    while (!state.done) {
      const started = performance.now();
      const response = await request(new URL(`/check?event=probe&feature=p${i++ % 50}`, service.url), {
        dispatcher: agent,
      });
      await response.body.dump();
      latencies.push(performance.now() - started);
      await sleep(Math.max(0, PROBE_EVERY_MS - (performance.now() - started)));
    }
  } finally {
    await agent.close();
  }
  return latencies;
}

const percentile = (values: readonly number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};

interface Measurement {
  readonly p99: number;
  readonly max: number;
  readonly sent: number;
  readonly answers: string;
  /** The service's CPU over the run, and the probes it answered meanwhile. */
  readonly cpuMicros: number;
  readonly probes: number;
}

/**
 * The service on the first core, alone; the clients (this process, which probes, and the
 * sender) on the others: a flood comes from another machine, whose work delays memgate no
 * more than a network does. On one core, or without taskset, nothing is pinned (false).
 */
async function pinApart(servicePids: readonly number[], clientPids: readonly number[]): Promise<boolean> {
  const cores = availableParallelism();
  if (cores < 2) return false;
  try {
    for (const pid of servicePids) await taskset('0', pid);
    for (const pid of clientPids) await taskset(`1-${cores - 1}`, pid);
    return true;
  } catch {
    return false;
  }
}

/** Lets every thread of `pid` run on `cpus` only (taskset's list: `0`, `1-3`). */
function taskset(cpus: string, pid: number): Promise<unknown> {
  return promisify(execFile)('taskset', ['-a', '-p', '-c', cpus, String(pid)]);
}

/** The flood sender's next message (scripts/bench/oversized-floods.ts). */
async function nextMessage(sender: ChildProcess): Promise<SenderMessage> {
  const done = new AbortController();
  try {
    const [message] = (await Promise.race([
      once(sender, 'message', { signal: done.signal }),
      once(sender, 'exit', { signal: done.signal }).then(() => {
        throw new Error('the flood sender exited');
      }),
    ])) as [SenderMessage];
    return message;
  } finally {
    done.abort();
  }
}

async function measure(
  service: Measured,
  flood: { sender: ChildProcess; index: number } | undefined,
  seconds: number,
): Promise<Measurement> {
  const before = await cpuMicros(service.pid);
  let flooding: Promise<SenderMessage | undefined> = sleep(seconds * 1000).then(() => undefined);
  if (flood) {
    flooding = nextMessage(flood.sender);
    flood.sender.send({ index: flood.index, seconds } satisfies FloodOrder);
  }
  const latencies = await probe(service, flooding);
  const report = await flooding;
  const after = await cpuMicros(service.pid);
  const cpu = after.user + after.system - before.user - before.system;
  const answers = report && 'answers' in report ? Object.entries(report.answers) : [];
  return {
    p99: percentile(latencies, 99),
    max: Math.max(...latencies),
    sent: report && 'sent' in report ? report.sent : 0,
    answers: answers.map(([answer, count]) => `${answer} ×${count}`).join(', '),
    cpuMicros: cpu,
    probes: latencies.length,
  };
}

export const oversized: Suite = {
  name: 'oversized',
  about: 'floods of the largest refused requests (gRPC and HTTP) from one client, against /check probed every 10 ms',
  estimateSeconds: ({ duration, rounds }) => rounds * (FLOOD_COUNT + 1) * (duration + 0.5) + 5,

  run: async ({ servers, duration, rounds, progress, doing }) => {
    const dir = await mkdtemp(join(tmpdir(), 'memgate-bench-'));
    const policies = join(dir, 'policies.yaml');
    const envoy = join(dir, 'envoy.yaml');
    await writeFile(
      policies,
      'events:\n  api:\n    limits:\n      - { limit: 100, window: 1m }\n  probe:\n    limits:\n      - { limit: 1000000, window: 1m }\n',
    );
    await writeFile(
      envoy,
      'domain: edge\ndescriptors:\n  - key: a\n    rate_limit: { unit: hour, requests_per_unit: 10 }\n',
    );
    const service = await startGrpcService({ servers, policies, envoy, keyPrefix: `oversized${process.pid}` });
    // The sender runs in its own process (under tsx, as this one does: fork passes execArgv on).
    const sender = fork(fileURLToPath(new URL('./oversized-floods.ts', import.meta.url)), [
      service.url.href,
      service.grpcAddress,
    ]);
    const runs = new Map<string, Measurement[]>();
    const cases: (FloodCase | undefined)[] = [undefined];
    let pinned = false;
    try {
      const ready = await nextMessage(sender);
      if (!('ready' in ready)) throw new Error('the flood sender did not start');
      const servicePids = [service.pid, ...(service.launcherPid === undefined ? [] : [service.launcherPid])];
      pinned = await pinApart(servicePids, [process.pid, ...(sender.pid === undefined ? [] : [sender.pid])]);
      cases.push(...ready.ready.map((flood, index) => ({ ...flood, index })));
      for (let round = 1; round <= rounds; round++) {
        for (const flood of cases) {
          const name = flood?.name ?? 'none';
          doing(`oversized, round ${round}/${rounds}: ${name}`);
          const run = await measure(service, flood && { sender, index: flood.index }, duration);
          progress(
            `oversized, round ${round}/${rounds}: ${name}: /check p99 ${run.p99.toFixed(1)} ms, max ${run.max.toFixed(1)} ms${flood ? `, ${run.sent} sent (${run.answers})` : ''}`,
          );
          runs.set(name, [...(runs.get(name) ?? []), run]);
        }
      }
    } finally {
      // This process runs the other suites after: every core again.
      if (pinned) await taskset(`0-${availableParallelism() - 1}`, process.pid).catch(() => undefined);
      if (sender.exitCode === null && sender.signalCode === null) {
        const exited = once(sender, 'exit');
        sender.disconnect();
        await exited;
      }
      await service.stop();
    }
    const quiet = runs.get('none') ?? [];
    const alone = median(quiet.map((r) => r.p99));
    // A flood request's CPU: the run's, less what its probes cost in the runs without a flood.
    const perProbe = median(quiet.map((r) => r.cpuMicros / Math.max(1, r.probes)));
    const perFloodRequest = (r: Measurement) => Math.max(0, r.cpuMicros - r.probes * perProbe) / Math.max(1, r.sent);
    let worst = 0;
    const rows = cases.map((flood) => {
      const list = runs.get(flood?.name ?? 'none') ?? [];
      const p99 = median(list.map((r) => r.p99));
      if (flood) worst = Math.max(worst, p99 / alone);
      return [
        flood?.name ?? 'no flood',
        flood?.answer ?? '–',
        flood ? String(Math.round(median(list.map((r) => r.sent)) / duration)) : '–',
        flood ? String(Math.round(median(list.map(perFloodRequest)))) : `${Math.round(perProbe)} per probe`,
        p99.toFixed(1),
        median(list.map((r) => r.max)).toFixed(1),
        flood ? `${(p99 / alone).toFixed(2)}×` : '1.00×',
      ];
    });
    const table = markdownTable(
      [
        [
          'flood from one client',
          'answered',
          'requests/s',
          'server CPU µs/request',
          '/check p99 ms',
          '/check max ms',
          'p99 vs no flood',
        ],
        ...rows,
      ],
      { align: ['l', 'l', 'r', 'r', 'r', 'r', 'r'] },
    );
    const line = `The worst flood moved /check's p99 ${verdict(worst, P99_AT_MOST, 'at most')}.`;
    const markdown = `## Oversized requests

Produced by \`npm run bench -- --suite oversized --duration ${duration} --rounds ${rounds}\`.

The memgate service (\`node dist/main.js\`, on Memcached, with its gRPC port) is checked by one client with \`GET /check\` every ${PROBE_EVERY_MS} ms, one request at a time, while another client, in its own process, sends the largest requests memgate refuses, one after another, ${FLOOD_PER_SECOND} a second (the outside tester's stream sent 4 to 6), for ${duration} s per flood; medians over ${rounds} rounds. ${pinned ? 'The service has the first core to itself (taskset) and both clients the others, as a flood from another machine would leave it; Memcached runs where the system puts it.' : 'Nothing is pinned to a core (one core, or no taskset): the clients take CPU from the service.'} Every size is refused before the bulk of the work: a gRPC message over 64 KB on its length prefix (its stream then closed with RST_STREAM(NO_ERROR), so the sender stops and the connection stays), counts and lengths by a walk over the message's bytes before it is decoded (\`src/grpc/wire-scan.ts\`), a body over its route's limit by its length, and JSON nested or holding more values than any request by one pass over the bytes before \`JSON.parse\` (\`src/http/json-body.ts\`); a JSON body over 32 KB is scanned, parsed and checked in steps with the event loop free between them. Server CPU is the service's user and system time from \`/proc\` over a run, less what the probes cost in the runs without a flood, over the flood's requests.

${table}

${line}
`;
    return { markdown, summary: `${table}\n\n${line}` };
  },
};
