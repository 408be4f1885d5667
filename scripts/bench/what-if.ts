// `memgate what-if` on generated access logs of growing length and clients: the peak resident
// memory of the command (node dist/main.js what-if, as an operator runs it) against the log's
// size. The log is streamed, so memory follows the clients, not the lines.
import { execFile } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { markdownTable } from 'markdown-table';
import type { Suite } from './suite.js';

/** Loaded into the command's process: prints its peak RSS as it exits. */
const PEAK_REPORTER = fileURLToPath(new URL('what-if-peak.mjs', import.meta.url));

interface LogCase {
  readonly lines: number;
  readonly clients: number;
  /** node's --max-old-space-size, in MiB; node's default when absent. */
  readonly heapMb?: number;
}

const CASES: readonly LogCase[] = [
  { lines: 250_000, clients: 1000 },
  { lines: 1_000_000, clients: 1000 },
  { lines: 4_000_000, clients: 1000 },
  // The longest log again in a heap of a fixed size: it fits, as a log read whole never would.
  { lines: 4_000_000, clients: 1000, heapMb: 64 },
  { lines: 1_000_000, clients: 100_000 },
];
/** Requests a second of the generated log, every client in turn. */
const PER_SECOND = 200;

const CURRENT = `gateway:
  routes:
    - { prefix: /api/, event: api }
    - { prefix: /, event: pages }
events:
  api:
    limits: [{ limit: 100, window: 1m }]
  pages:
    limits: [{ limit: 100, window: 1m }]
`;
const NEW = CURRENT.replaceAll('limit: 100', 'limit: 10');

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const two = (n: number) => String(n).padStart(2, '0');

/** A Combined Log Format log of `lines` requests by `clients` addresses, PER_SECOND a second from 2026-01-01. */
async function writeLog(path: string, { lines, clients }: LogCase): Promise<number> {
  const out = createWriteStream(path);
  const start = Date.UTC(2026, 0, 1);
  let text = '';
  for (let i = 0; i < lines; i++) {
    if (i % PER_SECOND === 0) {
      if (text.length > 1 << 20) {
        if (!out.write(text)) await once(out, 'drain');
        text = '';
      }
    }
    const date = new Date(start + Math.floor(i / PER_SECOND) * 1000);
    const client = i % clients;
    const time = `${two(date.getUTCDate())}/${MONTHS[date.getUTCMonth()]}/${date.getUTCFullYear()}:${two(date.getUTCHours())}:${two(date.getUTCMinutes())}:${two(date.getUTCSeconds())} +0000`;
    const target = i % 4 === 0 ? `/pages/${i % 97}` : `/api/items/${i % 1009}?page=${i % 7}`;
    text += `10.${(client >> 16) & 255}.${(client >> 8) & 255}.${client & 255} - - [${time}] "GET ${target} HTTP/1.1" 200 ${512 + (i % 300)} "-" "Mozilla/5.0 (bench)"\n`;
  }
  out.end(text);
  await once(out, 'finish');
  return (await stat(path)).size;
}

interface WhatIfRun {
  readonly peakMb: number;
  readonly seconds: number;
}

/** `node dist/main.js what-if` on `trace`: its peak RSS and how long it took. */
async function runWhatIf(folder: string, trace: string, heapMb: number | undefined): Promise<WhatIfRun> {
  const started = performance.now();
  const { stderr } = await promisify(execFile)(
    process.execPath,
    [
      ...(heapMb === undefined ? [] : [`--max-old-space-size=${heapMb}`]),
      '--import',
      PEAK_REPORTER,
      'dist/main.js',
      'what-if',
      '--policies',
      join(folder, 'new.yaml'),
      '--current',
      join(folder, 'current.yaml'),
      '--trace',
      trace,
      '--json',
      '--out',
      join(folder, 'report.json'),
      '--chart',
      join(folder, 'chart.svg'),
    ],
    { maxBuffer: 1 << 20 },
  );
  const seconds = (performance.now() - started) / 1000;
  const peakKib = /peak-rss-kib (\d+)/.exec(stderr)?.[1];
  if (peakKib === undefined) throw new Error(`what-if printed no peak RSS: ${stderr}`);
  return { peakMb: Number(peakKib) / 1024, seconds };
}

/** `--max-old-space-size=64`, or `default`: the heap a case ran in. */
const heapName = (heapMb: number | undefined) =>
  heapMb === undefined ? 'default' : `\`--max-old-space-size=${heapMb}\``;

export const whatIf: Suite = {
  name: 'what-if',
  about: 'memgate what-if: peak RSS and time against the log’s lines and clients',
  estimateSeconds: () => 300,

  run: async ({ doing, progress }) => {
    const folder = await mkdtemp(join(tmpdir(), 'memgate-bench-what-if-'));
    const rows: string[][] = [];
    try {
      await writeFile(join(folder, 'current.yaml'), CURRENT);
      await writeFile(join(folder, 'new.yaml'), NEW);
      const trace = join(folder, 'access.log');
      let written: { readonly logCase: LogCase; readonly bytes: number } | undefined;
      for (const logCase of CASES) {
        const name = `${logCase.lines.toLocaleString('en')} lines, ${logCase.clients.toLocaleString('en')} clients`;
        // A case that differs only in its heap replays the log already written.
        if (written?.logCase.lines !== logCase.lines || written.logCase.clients !== logCase.clients) {
          doing(`what-if: writing a log of ${name}`);
          written = { logCase, bytes: await writeLog(trace, logCase) };
        }
        const { bytes } = written;
        doing(`what-if: replaying ${name}, ${heapName(logCase.heapMb)} heap`);
        const run = await runWhatIf(folder, trace, logCase.heapMb);
        progress(
          `what-if: ${name}, ${Math.round(bytes / 2 ** 20)} MiB, ${heapName(logCase.heapMb)} heap: peak RSS ${Math.round(run.peakMb)} MiB in ${run.seconds.toFixed(1)} s`,
        );
        rows.push([
          logCase.lines.toLocaleString('en'),
          logCase.clients.toLocaleString('en'),
          String(Math.round(bytes / 2 ** 20)),
          heapName(logCase.heapMb),
          String(Math.round(run.peakMb)),
          run.seconds.toFixed(1),
          Math.round(logCase.lines / run.seconds).toLocaleString('en'),
        ]);
      }
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
    const table = markdownTable(
      [['log lines', 'clients', 'log MiB', 'node heap', 'peak RSS MiB', 'seconds', 'lines/s'], ...rows],
      { align: ['r', 'r', 'r', 'l', 'r', 'r', 'r'] },
    );
    const markdown = `## what-if on long logs

Produced by \`npm run bench -- --suite what-if\` (on ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}).

\`node dist/main.js what-if\` as an operator runs it, on Combined Log Format logs it generates (${PER_SECOND} requests a second, every client in turn, three in four on \`/api/\` and one on \`/pages/\`), placed by a gateway section of two routes with limits of 100 and 10 a minute, with \`--json --out\` and \`--chart\`. Peak RSS is the process's own (getrusage's maximum resident set), printed as it exits. The log is streamed: what the command keeps follows the clients (each keeps the requests it was admitted within the longest window), not the lines, and the chart keeps at most 500 points a series. With node's default heap, V8 lets a busy heap grow before it collects, so peak RSS still rises a little with the log's length; in a heap of a fixed size the longest log fits all the same.

${table}
`;
    return { markdown, summary: table };
  },
};
