// Benchmarks memgate: against its peers, on the path abuse takes, under overload and as its
// active clients grow. Prints the results; writes them into docs/performance.md only with
// --write-docs, each suite into its own section.
//   npm run bench -- --help
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { cpus, totalmem } from 'node:os';
import { promisify } from 'node:util';
import { COMPILED_ENV } from './bench/compiled.js';
import { denyPath } from './bench/deny.js';
import { embedded } from './bench/embedded.js';
import { memory } from './bench/memory.js';
import { overload } from './bench/overload.js';
import type { Suite, SuiteContext, SuiteReport } from './bench/suite.js';
import { throughput } from './bench/throughput.js';
import { commandLine } from './lib/command-line.js';
import { startMemcachedProcess } from './lib/memcached-process.js';

const SUITES: readonly Suite[] = [embedded, throughput, denyPath, overload, memory];
const DOCS = 'docs/performance.md';

const USAGE = `usage: npm run bench -- [options]

  --suite LIST      suites to run, comma-separated (default: all of them, in this order)
${SUITES.map((suite) => `                      ${suite.name.padEnd(11)} ${suite.about}`).join('\n')}
  --duration S      seconds per load run (default 5)
  --connections N   concurrent connections of the throughput and deny suites (default 50)
  --rounds N        rounds; every case runs once per round, in turn (default 3)
  --memcached H:P   an existing Memcached (default: start one on a free port)
  --write-docs      write the results into ${DOCS}, each suite into its own section
                    (without it, nothing is written)`;

const { values, fail, positiveInteger } = commandLine('bench', USAGE, {
  suite: { type: 'string' },
  duration: { type: 'string' },
  connections: { type: 'string' },
  rounds: { type: 'string' },
  memcached: { type: 'string' },
  'write-docs': { type: 'boolean' },
});
const chosen = (values.suite ?? SUITES.map((s) => s.name).join(','))
  .split(',')
  .map((name) => SUITES.find((suite) => suite.name === name.trim()) ?? fail(`--suite: no suite ${JSON.stringify(name)}`));
const duration = positiveInteger(values.duration, 'duration', 5);
const connections = positiveInteger(values.connections, 'connections', 50);
const rounds = positiveInteger(values.rounds, 'rounds', 3);

const started = performance.now();
const elapsed = () => `${Math.round((performance.now() - started) / 1000)} s`;
// A line per step, on a terminal or in a CI log alike.
const progress = (line: string) => process.stderr.write(`[${elapsed()}] ${line}\n`);
const estimate = chosen.reduce((sum, suite) => sum + suite.estimateSeconds({ duration, rounds }), 0);
progress(`running ${chosen.map((s) => s.name).join(', ')}: about ${Math.ceil(estimate / 60)} min${values['write-docs'] ? `, then writing ${DOCS}` : ''}`);

// Every suite runs the JavaScript `npm start` runs (see bench/compiled.ts).
progress('building dist/ (npm run build)…');
await promisify(execFile)('npm', ['run', 'build']);
process.env[COMPILED_ENV] = '1';
const ownMemcached = values.memcached ? undefined : await startMemcachedProcess();
const servers = values.memcached ?? ownMemcached?.servers ?? fail('no Memcached');
const machineLine = await machine(servers);
const context: SuiteContext = { servers, duration, connections, rounds, progress };
const reports = new Map<string, SuiteReport>();
try {
  for (const suite of chosen) {
    reports.set(suite.name, await suite.run(context));
    console.log(`\n${reports.get(suite.name)?.summary ?? ''}\n`);
  }
} finally {
  await ownMemcached?.stop();
}
progress(`done in ${elapsed()}`);

if (values['write-docs']) {
  let text = await readFile(DOCS, 'utf8').catch(() => '');
  if (!text.includes('<!-- bench:')) text = '';
  text = text || skeleton();
  for (const [name, report] of reports) {
    const section = new RegExp(`<!-- bench:${name} -->[\\s\\S]*?<!-- /bench:${name} -->`);
    text = text.replace(section, `<!-- bench:${name} -->\n${report.markdown.trim()}\n<!-- /bench:${name} -->`);
  }
  await writeFile(DOCS, text.replace(/^Machine: .*$/m, machineLine));
  progress(`wrote ${[...reports.keys()].join(', ')} into ${DOCS}`);
}

/** The page's frame: each suite's section sits between markers, so one suite can be run and written alone. */
function skeleton(): string {
  return `# memgate performance

Written by \`npm run bench -- --write-docs\` (each suite's section by \`--suite NAME --write-docs\`). Everything runs on one machine: the load generator, the servers and Memcached share its cores, so **compare ratios within a section, not absolute numbers across sections or runs**.

${machineLine}

${SUITES.map((suite) => `<!-- bench:${suite.name} -->\n<!-- /bench:${suite.name} -->`).join('\n\n')}
`;
}

async function machine(memcached: string): Promise<string> {
  const cpu = cpus();
  return `Machine: ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, memcached ${await memcachedVersion(memcached)}, last written ${new Date().toISOString().slice(0, 10)}.`;
}

/** The server's own version string. */
function memcachedVersion(memcached: string): Promise<string> {
  return new Promise((resolve) => {
    const [host = '127.0.0.1', port = '11211'] = memcached.split(',')[0]?.split(':') ?? [];
    const socket = createConnection({ host, port: Number(port) }, () => socket.write('version\r\n'));
    socket.once('data', (data) => {
      resolve(data.toString().trim().replace(/^VERSION /, ''));
      socket.end();
    });
    socket.once('error', () => {
      resolve('unknown');
    });
  });
}
