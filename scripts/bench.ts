// Benchmarks memgate against the cheapest possible networked limiter (one Memcached
// increment per request), a peer library and the naive design, side by side on one
// machine and HTTP stack, and writes the results to docs/performance.md.
//   npm run bench -- --help
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { cpus, totalmem } from 'node:os';
import { markdownTable } from 'markdown-table';
import { benchEmbedded } from './bench/embedded.js';
import { commandLine } from './lib/command-line.js';
import { startMemcachedProcess } from './lib/memcached-process.js';
import { featureSpread, runLoad, type LoadSummary } from './lib/run-load.js';

const USAGE = `usage: npm run bench -- [options]

  --duration S      seconds per run (default 5)
  --connections N   concurrent connections (default 50)
  --rounds N        rounds; every case runs once per round, in turn (default 3)
  --memcached H:P   an existing Memcached (default: start one on a free port)
  --out FILE        where the Markdown results go (default docs/performance.md; - for none)`;

const CASES = ['floor', 'peer', 'naive', 'memgate-60s', 'memgate-1d'] as const;

/** What each case is, for the report. */
const DESCRIPTIONS: Record<string, string> = {
  ceiling: 'the same fastify route answering at once, without Memcached: what the HTTP stack alone allows',
  floor: 'one memjs increment per request and nothing else',
  peer: "rate-limiter-flexible's RateLimiterMemcache",
  naive: 'the design read literally: an increment, then 59 separate gets fanned out with p-limit',
  'memgate-60s': 'memgate, 60 s sliding window, 1 s buckets',
  'memgate-1d': 'memgate, 1-day sliding window, hour, minute and second buckets',
  'memgate-deny': 'memgate, 60 s window, one feature far over its limit (every check a denial)',
  'memgate-60s-uncached': 'memgate-60s without settled counts kept between checks (`cacheBytes: 0`): every check reads its whole window',
  'memgate-60s-uncorked': 'memgate-60s with one socket write per check instead of one per event-loop turn (`coalesceWrites: false`)',
  'memgate-1d-uncached': 'memgate-1d without settled counts kept between checks',
  'memgate-deny-uncached': 'memgate-deny without denials repeated from memory (`maxDenialCacheMs: 0`)',
};

interface Workload {
  readonly name: string;
  readonly features: string;
  readonly cases: readonly string[];
}

const WORKLOADS: readonly Workload[] = [
  { name: 'one hot feature', features: 'hot', cases: [...CASES, 'ceiling', 'memgate-60s-uncached', 'memgate-60s-uncorked', 'memgate-1d-uncached'] },
  { name: '100,000 features, Zipf', features: 'zipf:100000', cases: CASES },
  { name: 'deny path', features: 'hot', cases: ['floor', 'ceiling', 'memgate-deny', 'memgate-deny-uncached'] },
];

/** The issue's targets: a case's throughput over the floor's, same workload and run. */
const TARGETS: { workload: string; case: string; atLeast: number }[] = [
  { workload: 'one hot feature', case: 'memgate-60s', atLeast: 0.9 },
  { workload: '100,000 features, Zipf', case: 'memgate-60s', atLeast: 0.7 },
  { workload: 'one hot feature', case: 'memgate-1d', atLeast: 0.8 },
  { workload: 'deny path', case: 'memgate-deny', atLeast: 1.5 },
];

const { values, fail, positiveInteger } = commandLine('bench', USAGE, {
  duration: { type: 'string' },
  connections: { type: 'string' },
  rounds: { type: 'string' },
  memcached: { type: 'string' },
  out: { type: 'string' },
});
const duration = positiveInteger(values.duration, 'duration', 5);
const connections = positiveInteger(values.connections, 'connections', 50);
const rounds = positiveInteger(values.rounds, 'rounds', 3);
const out = values.out ?? 'docs/performance.md';

const ownMemcached = values.memcached ? undefined : await startMemcachedProcess();
const servers = values.memcached ?? ownMemcached?.servers ?? fail('no Memcached');

/** The server's own version string, for the report's machine description. */
const memcachedVersion = await new Promise<string>((resolve) => {
  const [host = '127.0.0.1', port = '11211'] = servers.split(',')[0]?.split(':') ?? [];
  const socket = createConnection({ host, port: Number(port) }, () => socket.write('version\r\n'));
  socket.once('data', (data) => {
    resolve(data.toString().trim().replace(/^VERSION /, ''));
    socket.end();
  });
  socket.once('error', () => {
    resolve('unknown');
  });
});

/** Starts a case's server process and resolves with its URL once it listens. */
function startCase(name: string): Promise<{ url: URL; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/bench/server.ts', name, servers], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      reject(new Error(`bench server ${name} exited with ${String(code)}`));
    });
    child.stdout.once('data', (chunk: Buffer) => {
      const { port } = JSON.parse(chunk.toString()) as { port: number };
      resolve({
        url: new URL(`http://127.0.0.1:${port}`),
        stop: () =>
          new Promise((done) => {
            child.removeAllListeners('exit');
            child.once('exit', () => {
              done();
            });
            child.kill('SIGTERM');
          }),
      });
    });
  });
}

// In process first, while nothing else runs: the embedded store's own speed.
process.stderr.write('embedded store, in process… ');
const embedded = await benchEmbedded();
process.stderr.write('done\n');
const embeddedTable = markdownTable(
  [
    ['embedded store, in process, no HTTP', 'checks/s', 'target'],
    ...embedded.map((e) => [e.name, String(e.checksPerSecond), `≥ 1,000,000 ${e.checksPerSecond >= 1_000_000 ? 'met' : 'not met'}`]),
  ],
  { align: ['l', 'r', 'l'] },
);

/** The CPU time a case's server process has used, in microseconds. */
async function serverCpu(url: URL): Promise<number> {
  const response = await fetch(new URL('/bench-cpu', url));
  return ((await response.json()) as { micros: number }).micros;
}

/** One run of one case: autocannon's summary and the server's CPU per answered request. */
interface Run extends LoadSummary {
  readonly cpuMicrosPerRequest: number;
}

const runs = new Map<string, Run[]>();
const key = (workload: string, name: string) => `${workload}|${name}`;
for (let round = 1; round <= rounds; round++) {
  for (const workload of WORKLOADS) {
    for (const name of workload.cases) {
      const server = await startCase(name);
      process.stderr.write(`round ${round}/${rounds}: ${workload.name}, ${name}… `);
      const cpuBefore = await serverCpu(server.url);
      const summary = await runLoad({ url: server.url, event: 'bench', connections, duration, nextFeature: featureSpread(workload.features, round) });
      const cpuMicros = (await serverCpu(server.url)) - cpuBefore;
      const run = { ...summary, cpuMicrosPerRequest: cpuMicros / Math.max(1, summary.requests) };
      await server.stop();
      process.stderr.write(
        `${summary.throughput} req/s, p99 ${summary.latencyMs.p99} ms, server ${run.cpuMicrosPerRequest.toFixed(1)} µs CPU/req${summary.errors > 0 ? `, ${summary.errors} errors` : ''}\n`,
      );
      runs.set(key(workload.name, name), [...(runs.get(key(workload.name, name)) ?? []), run]);
    }
  }
}
await ownMemcached?.stop();

const median = (numbers: number[]) => {
  const sorted = [...numbers].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
};
const throughput = (workload: string, name: string) => median((runs.get(key(workload, name)) ?? []).map((s) => s.throughput));
const p99 = (workload: string, name: string) => median((runs.get(key(workload, name)) ?? []).map((s) => s.latencyMs.p99));
const cpuPerRequest = (workload: string, name: string) => median((runs.get(key(workload, name)) ?? []).map((s) => s.cpuMicrosPerRequest));
const errors = (workload: string, name: string) => (runs.get(key(workload, name)) ?? []).reduce((sum, s) => sum + s.errors, 0);

const verdict = (ratio: number, atLeast: number) => `${ratio.toFixed(2)}× (≥ ${atLeast}× ${ratio >= atLeast ? 'met' : 'not met'})`;
const rows = WORKLOADS.flatMap((workload) =>
  workload.cases.map((name) => {
    const ratio = throughput(workload.name, name) / throughput(workload.name, 'floor');
    // Requests per second of server CPU, against the floor's: what a case costs, whoever is the bottleneck.
    const cpuRatio = cpuPerRequest(workload.name, 'floor') / cpuPerRequest(workload.name, name);
    const target = TARGETS.find((t) => t.workload === workload.name && t.case === name);
    return [
      workload.name,
      name,
      String(Math.round(throughput(workload.name, name))),
      String(p99(workload.name, name)),
      target ? verdict(ratio, target.atLeast) : `${ratio.toFixed(2)}×`,
      cpuPerRequest(workload.name, name).toFixed(1),
      target ? verdict(cpuRatio, target.atLeast) : `${cpuRatio.toFixed(2)}×`,
      String(errors(workload.name, name)),
    ];
  }),
);
const peerRatio = throughput('one hot feature', 'memgate-60s') / throughput('one hot feature', 'peer');
const table = markdownTable(
  [['workload', 'case', 'req/s (median)', 'p99 ms', 'req/s vs floor (target)', 'server CPU µs/req', 'req per CPU-s vs floor (target)', 'errors'], ...rows],
  { align: ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r'] },
);
const peerCpuRatio = cpuPerRequest('one hot feature', 'peer') / cpuPerRequest('one hot feature', 'memgate-60s');
const peerLine = `memgate-60s against the peer, one hot feature: ${verdict(peerRatio, 1.3)} in req/s, ${verdict(peerCpuRatio, 1.3)} in requests per server CPU-second; memgate-60s p99 ${p99('one hot feature', 'memgate-60s')} ms against the floor's ${p99('one hot feature', 'floor')} ms (target ≤ 2×).`;
const ceilingLine = (['one hot feature', 'deny path'] as const)
  .map((workload) => {
    const speed = throughput(workload, 'ceiling') / throughput(workload, 'floor');
    const cost = cpuPerRequest(workload, 'floor') / cpuPerRequest(workload, 'ceiling');
    return `${workload}: ${speed.toFixed(2)}× in req/s, ${cost.toFixed(2)}× per CPU-second`;
  })
  .join('; ');
const ceilingNote = `The ceiling, the same HTTP route answering without any work, bounds every case on this machine (${ceilingLine}): a case that skips Memcached entirely, as a repeated denial does, can at best match it.`;
console.log(`\n${table}\n\n${peerLine}\n\n${ceilingNote}\n\n${embeddedTable}`);

if (out !== '-') {
  const cpu = cpus();
  await writeFile(
    out,
    `# memgate performance

Produced by \`npm run bench -- --duration ${duration} --connections ${connections} --rounds ${rounds}\`, ${new Date().toISOString().slice(0, 10)}.

Each case is the same fastify HTTP stack answering \`GET /check\`, in its own process, loaded by autocannon (${connections} connections, ${duration} s per run) from the bench process, all on one machine with one Memcached. The cases ending in \`-uncached\` or \`-uncorked\` turn one of memgate's optimizations off, to measure what each brings ([design](design.md#what-an-instance-keeps-between-checks)). Every case runs once per round, in turn, and the table shows medians over ${rounds} rounds. **Compare ratios within this run, not absolute numbers across runs**: the machine is shared and noisy. Limits are high enough that requests are allowed, except in the deny-path case.

Machine: ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, memcached ${memcachedVersion}; autocannon, the case's server and memcached share the cores.

${WORKLOADS.flatMap((w) => w.cases)
  .filter((name, i, all) => all.indexOf(name) === i)
  .map((name) => `- **${name}**: ${DESCRIPTIONS[name] ?? name}`)
  .join('\n')}

${table}

${peerLine}

${ceilingNote} "Server CPU µs/req" is the case's server process's CPU time over the requests it answered; it does not depend on which process was the bottleneck of a run.

The embedded store alone, \`limiter.check\` in one process on one core with no HTTP (tinybench, 2 s per case, 100 checks per timed call, run before the HTTP cases). In the Zipf case most checks are of a client checked less than once a second, or not held by the 10,000-feature cache, so they build that second's window anew:

${embeddedTable}
`,
  );
  console.log(`results: ${out}`);
}
