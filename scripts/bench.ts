// Benchmarks memgate: against its peers, on the path abuse takes, under overload and as its
// active clients grow. Prints the results; writes them into docs/performance.md only with
// --write-docs, each suite into its own section.
//   npm run bench -- --help
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { promisify } from 'node:util';
import { algorithms } from './bench/algorithms.js';
import { client } from './bench/client.js';
import { COMPILED_ENV } from './bench/compiled.js';
import { denyPath } from './bench/deny.js';
import { clientRules } from './bench/clients.js';
import { embedded } from './bench/embedded.js';
import { exactness } from './bench/exactness.js';
import { oversized } from './bench/oversized.js';
import { grpc } from './bench/grpc.js';
import { memory } from './bench/memory.js';
import { overload } from './bench/overload.js';
import { failover } from './bench/failover.js';
import type { Suite, SuiteContext, SuiteReport } from './bench/suite.js';
import { throughput } from './bench/throughput.js';
import { tracing } from './bench/tracing.js';
import { reload } from './bench/reload.js';
import { startup } from './bench/startup.js';
import { usage } from './bench/usage.js';
import { whatIf } from './bench/what-if.js';
import { EXIT, runCommand } from '../src/commands/command-line.js';
import { memcachedVersion, startMemcachedProcess } from './lib/memcached-process.js';
import { formatSeconds, progressIntervalMs, startProgress } from './lib/progress.js';

const SUITES: readonly Suite[] = [
  embedded,
  clientRules,
  algorithms,
  throughput,
  denyPath,
  exactness,
  overload,
  oversized,
  memory,
  usage,
  client,
  grpc,
  failover,
  whatIf,
  reload,
  startup,
  tracing,
];
const DOCS = 'docs/performance.md';
/** About how long `npm run build` takes on the 2-core development machine. */
const BUILD_SECONDS = 20;

const USAGE = `usage: npm run bench -- [options]

  --suite LIST      suites to run, comma-separated (default: all of them, in this order)
${SUITES.map((suite) => `                      ${suite.name.padEnd(11)} ${suite.about}`).join('\n')}
  --duration S      seconds per load run (default 5)
  --connections N   concurrent connections of the throughput, deny and grpc suites (default 50)
  --rounds N        rounds; every case runs once per round, in turn (default 3)
  --memcached H:P   an existing Memcached (default: start one on a free port)
  --baseline REF    a commit of this clone to build and measure beside this one, where
                    a suite compares builds (throughput, deny, exactness, tracing)
  --write-docs      write the results into ${DOCS}, each suite into its own section
                    (without it, nothing is written)

Says at the start about how long it will take; progress goes to standard error (a line
every few seconds when it is not a terminal), results to standard output. Exits 0 when
every suite ran, 1 when one failed (a Memcached that does not answer, a server that did
not start), 2 for bad usage.`;

runCommand(
  {
    name: 'bench',
    usage: USAGE,
    options: {
      suite: { type: 'string' },
      duration: { type: 'string' },
      connections: { type: 'string' },
      rounds: { type: 'string' },
      memcached: { type: 'string' },
      baseline: { type: 'string' },
      'write-docs': { type: 'boolean' },
    },
  },
  async ({ values, fail, positiveInteger }) => {
    const chosen = (values.suite ?? SUITES.map((s) => s.name).join(','))
      .split(',')
      .map(
        (name) =>
          SUITES.find((suite) => suite.name === name.trim()) ??
          fail(`--suite: no suite ${JSON.stringify(name)}; the suites are ${SUITES.map((s) => s.name).join(', ')}`),
      );
    const duration = positiveInteger(values.duration, 'duration', 5);
    const connections = positiveInteger(values.connections, 'connections', 50);
    const rounds = positiveInteger(values.rounds, 'rounds', 3);
    if (values.memcached !== undefined && !/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}$/.test(values.memcached)) {
      fail(`--memcached must be host:port (got ${JSON.stringify(values.memcached)})`);
    }
    const everyMs = progressIntervalMs();
    // Refused before anything is built or started, rather than measuring a dead server.
    const given = values.memcached;
    const givenVersion =
      given === undefined
        ? undefined
        : await memcachedVersion(given).catch((error: unknown) => {
            throw new Error(`the Memcached at ${given} does not answer: ${(error as Error).message}`, { cause: error });
          });

    const estimate =
      BUILD_SECONDS + chosen.reduce((sum, suite) => sum + suite.estimateSeconds({ duration, rounds }), 0);
    const started = performance.now();
    const elapsed = () => (performance.now() - started) / 1000;
    const progress = startProgress({
      label: 'bench',
      total: estimate,
      describe: (done, total) => `${formatSeconds(done)} of about ${formatSeconds(total)}`,
      everyMs,
      // The estimate is only that: the bar stops short of 100% until the work is done.
      readDone: () => Math.min(elapsed(), 0.99 * estimate),
    });
    // Keeps a terminal's bar moving while a suite waits on its servers.
    const ticker = setInterval(() => {
      progress.update(0);
    }, 1000);
    const log = (line: string) => {
      progress.log(`[${formatSeconds(elapsed())}] ${line}`);
    };
    log(
      `running ${chosen.map((s) => s.name).join(', ')}: about ${formatSeconds(estimate)}${values['write-docs'] ? `, then writing ${DOCS}` : ''}`,
    );
    const reports = new Map<string, SuiteReport>();
    try {
      // Every suite runs the JavaScript `npm start` runs (see bench/compiled.ts).
      progress.update(0, 'building dist/ (npm run build)');
      await promisify(execFile)('npm', ['run', 'build']).catch((error: unknown) => {
        throw new Error('npm run build failed; run it to see why', { cause: error });
      });
      process.env[COMPILED_ENV] = '1';
      const ownMemcached = given === undefined ? await startMemcachedProcess() : undefined;
      const servers = given ?? ownMemcached?.servers ?? '';
      const machineLine = machine(givenVersion ?? (await memcachedVersion(servers)));
      const context: SuiteContext = {
        servers,
        duration,
        connections,
        rounds,
        ...(values.baseline === undefined ? {} : { baseline: values.baseline }),
        progress: log,
        doing: (what) => {
          progress.update(Math.min(elapsed(), 0.99 * estimate), what);
        },
      };
      try {
        for (const suite of chosen) {
          context.doing(suite.name);
          reports.set(suite.name, await suite.run(context));
          console.log(`\n${reports.get(suite.name)?.summary ?? ''}\n`);
        }
      } finally {
        await ownMemcached?.stop();
      }
      if (values['write-docs']) {
        await writeDocs(reports, machineLine);
        log(`wrote ${[...reports.keys()].join(', ')} into ${DOCS}`);
      }
      progress.update(elapsed());
      progress.done();
    } finally {
      clearInterval(ticker);
      progress.stop();
    }
    return EXIT.ok;
  },
);

/** Puts each suite's section into DOCS, keeping the sections of suites not run. */
async function writeDocs(reports: ReadonlyMap<string, SuiteReport>, machineLine: string): Promise<void> {
  let text = await readFile(DOCS, 'utf8').catch(() => '');
  if (!text.includes('<!-- bench:')) text = '';
  text = text || skeleton(machineLine);
  // The page's machine line is the machine of a run of every suite; a section written alone names its own.
  const everySuite = SUITES.every((suite) => reports.has(suite.name));
  const ownMachine = everySuite ? '' : `\n\n${machineLine.replace(/^Machine: /, 'Measured on: ')}`;
  for (const [name, report] of reports) {
    const section = new RegExp(`<!-- bench:${name} -->[\\s\\S]*?<!-- /bench:${name} -->`);
    const written = `<!-- bench:${name} -->\n${report.markdown.trim()}${ownMachine}\n<!-- /bench:${name} -->`;
    // A suite added since the page was made has no markers yet: its section goes at the end.
    text = section.test(text) ? text.replace(section, () => written) : `${text.trimEnd()}\n\n${written}\n`;
  }
  await writeFile(DOCS, everySuite ? text.replace(/^Machine: .*$/m, machineLine) : text);
}

/** The page's frame: each suite's section sits between markers, so one suite can be run and written alone. */
function skeleton(machineLine: string): string {
  return `# memgate performance

Written by \`npm run bench -- --write-docs\` (each suite's section by \`--suite NAME --write-docs\`). Everything runs on one machine: the load generator, the servers and Memcached share its cores, so **compare ratios within a section, not absolute numbers across sections or runs**.

${machineLine}

${SUITES.map((suite) => `<!-- bench:${suite.name} -->\n<!-- /bench:${suite.name} -->`).join('\n\n')}
`;
}

function machine(memcachedVersion: string): string {
  const cpu = cpus();
  return `Machine: ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, memcached ${memcachedVersion}, last written ${new Date().toISOString().slice(0, 10)}.`;
}
