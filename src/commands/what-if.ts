// `memgate what-if`: who a change of policies would refuse, before it is made. An access log is
// replayed through the policies in use and the new ones (src/what-if/), and the report says per
// event how many requests each denies and which clients the change newly refuses or admits.
//   memgate what-if --policies new.yaml --trace access.log
import { open, readFile, type FileHandle } from 'node:fs/promises';
import { DEFAULTS } from '../config/defaults.js';
import { parsePolicyText, PolicyError, type PolicySet } from '../config/policies.js';
import { BUNDLED_POLICIES } from '../config/settings.js';
import { planEvents } from '../counting/plan.js';
import { readAccessLog, type SkipReason } from '../what-if/access-log.js';
import { Comparison, type ClientChange, type EventChange, type WhatIfReport } from '../what-if/compare.js';
import { ExactReplay } from '../what-if/exact-replay.js';
import { whatIfChart } from '../what-if/chart.js';
import { EXIT, fileProblem, runCommand } from './command-line.js';
import { outputFile, writeOutput } from './output.js';
import { terminalProgress } from './terminal-progress.js';

const USAGE = `usage: memgate what-if --policies NEW --trace LOG [options]

  --policies NEW   the policy file to try (YAML, or JSON when it ends in .json)
  --current FILE   the policies in use to compare with (default: MEMGATE_CONFIG, else the
                   bundled config/policies.yaml)
  --trace LOG      an access log in the Common or Combined Log Format (nginx's and Apache's
                   defaults): host, time, request line; the rest of each line is ignored.
                   Read as it streams (a pipe will do) and replayed in time order within
                   ${DEFAULTS.whatIfReorderSeconds} s; lines longer than ${DEFAULTS.whatIfMaxLineBytes.toLocaleString('en')} bytes, lines that are not access log
                   lines and lines further out of order are skipped and counted
  --event EVENT    count every request against EVENT, instead of placing each by the
                   policy file's gateway section as /gate would
  --top N          clients listed per event as newly refused and newly admitted (default 10)
  --json           the report as JSON
  --chart FILE     also draw denials over time, in use and new, per event, as an SVG file:
                   per minute, or per longer steps when the log spans more than ${DEFAULTS.whatIfChartPoints} of them
  --out FILE       where the report goes (default -, standard output)

Each request is placed as /gate would place it under each file (its routes, client address,
allow and deny lists), gets the limits memgate would give its client (lists, the most specific
override current at the request's time, the event's own) and is decided on exact sliding logs:
what memgate decides at 1 s granularity. A log holds no headers: a gateway section that counts
clients by a header counts them by the log's host here, and tiers named by a header or a
caller do not apply. Exits 0 with the report, 1 when a file is invalid, 2 for bad usage.`;

/** Runs `memgate what-if` on `args`, the arguments after its name. */
export function runWhatIf(args: readonly string[]): void {
  runCommand(
    {
      name: 'what-if',
      invocation: 'memgate what-if',
      args,
      usage: USAGE,
      options: {
        policies: { type: 'string' },
        current: { type: 'string' },
        trace: { type: 'string' },
        event: { type: 'string' },
        top: { type: 'string' },
        json: { type: 'boolean' },
        chart: { type: 'string' },
        out: { type: 'string' },
      },
    },
    async ({ values, fail, positiveInteger }) => {
      const newPath = values.policies ?? fail('--policies NEW is required: the policy file to try');
      const tracePath = values.trace ?? fail('--trace LOG is required: an access log to replay');
      const currentPath = values.current ?? process.env.MEMGATE_CONFIG ?? BUNDLED_POLICIES;
      const top = positiveInteger(values.top, 'top', 10);
      const read = (path: string) =>
        readFile(path, 'utf8').catch((error: unknown) => fail(`cannot read ${path}: ${fileProblem(error)}`));
      const [newText, currentText] = await Promise.all([read(newPath), read(currentPath)]);
      // Opened now, so that a log that cannot be read is refused before anything is done.
      const trace = await openLog(tracePath).catch((error: unknown) =>
        fail(`cannot read ${tracePath}: ${fileProblem(error)}`),
      );
      const out = await outputFile(values.out ?? '-');
      const chart = values.chart === undefined ? undefined : await outputFile(values.chart);
      let policies: [PolicySet, PolicySet];
      try {
        policies = [parsePolicyText(currentText, currentPath), parsePolicyText(newText, newPath)];
        // What memgate would refuse to load (a window that reads too many keys) is refused here too.
        for (const set of policies) planEvents(set);
      } catch (error) {
        await trace.handle.close();
        if (!(error instanceof PolicyError)) throw error;
        console.error(error.message);
        return EXIT.failed;
      }
      const options = { event: values.event };
      for (const set of policies) {
        if (options.event === undefined && !set.gateway) {
          await trace.handle.close();
          fail(
            `${set.source} has no gateway section to place the log's requests by; give --event EVENT to count them all against one event`,
          );
        }
      }
      const comparison = new Comparison(new ExactReplay(policies[0], options), new ExactReplay(policies[1], options), {
        top,
        chartPoints: DEFAULTS.whatIfChartPoints,
      });
      // A long log says how far it is on a terminal; a pipe's size is not known, only what was read.
      const progress = terminalProgress();
      let replayed = 0;
      const log = await readAccessLog(trace.handle.createReadStream(), {
        maxLineBytes: DEFAULTS.whatIfMaxLineBytes,
        reorderMs: DEFAULTS.whatIfReorderSeconds * 1000,
        reorderBytes: DEFAULTS.whatIfReorderBytes,
        onRequest: (request) => {
          comparison.add(request);
          replayed++;
        },
        onBytesRead: (bytes) => {
          progress.update(
            () =>
              `what-if: ${trace.bytes ? `${Math.floor((100 * bytes) / Math.max(1, trace.bytes))}% of ${tracePath}` : `${number(Math.round(bytes / 2 ** 20))} MiB of ${tracePath}`}, ${number(replayed)} requests replayed`,
          );
        },
      });
      progress.end();
      if (log.requests === 0) {
        const first = log.skipped['not an access log line']?.firstText;
        fail(
          `${tracePath} holds no access log line${first === undefined ? '' : `; the first line reads ${JSON.stringify(first)}`}`,
        );
      }
      const report = comparison.report(tracePath, log);
      // The text report says what was skipped; with --json or --out, standard error says it too.
      const skipped = skippedText(report.trace.skipped);
      if (skipped && (values.json === true || out.kind === 'file')) console.error(`what-if: ${tracePath}: ${skipped}`);
      await writeOutput(out, values.json === true ? JSON.stringify(report, null, 2) : renderReport(report));
      if (chart) await writeOutput(chart, whatIfChart(report));
      return EXIT.ok;
    },
  );
}

const number = (n: number) => n.toLocaleString('en');
const signed = (n: number) => (n > 0 ? `+${number(n)}` : n < 0 ? `−${number(-n)}` : '0');
const utc = (seconds: number) => new Date(seconds * 1000).toISOString().replace('T', ' ').replace('.000Z', ' UTC');

/** The report as text: a table of events, then each event's clients whose fate changes. */
export function renderReport(report: WhatIfReport): string {
  const { trace } = report;
  const lines = [
    `${trace.path}: ${number(trace.requests)} requests${trace.from === undefined ? '' : ` from ${utc(trace.from)} to ${utc(trace.until ?? trace.from)}`}`,
    ...(skippedText(trace.skipped) ? [skippedText(trace.skipped)] : []),
    `in use: ${report.current.source}${uncountedText(report.current.uncounted)}`,
    `new:    ${report.new.source}${uncountedText(report.new.uncounted)}`,
    '',
  ];
  const rows = [['event', 'requests', 'denied in use', 'denied new', 'change', 'shadow denied new']];
  for (const event of report.events)
    rows.push([
      event.event,
      event.requests.current === event.requests.new
        ? number(event.requests.new)
        : `${number(event.requests.current)} → ${number(event.requests.new)}`,
      number(event.denied.current),
      number(event.denied.new),
      signed(event.denied.new - event.denied.current),
      event.shadowDenied.new > 0 || event.shadowDenied.current > 0 ? number(event.shadowDenied.new) : '',
    ]);
  lines.push(...table(rows));
  for (const event of report.events) lines.push(...clientLines(event));
  if (report.events.length === 0) lines.push('no request of the log counts against an event under either file');
  return lines.join('\n');
}

/** What each reason for skipping lines says of `count` of them. */
const SKIPPED_AS: Readonly<Record<SkipReason, (count: number) => string>> = {
  'too long': () => `longer than ${number(DEFAULTS.whatIfMaxLineBytes)} bytes`,
  'not an access log line': (count) => (count === 1 ? 'not an access log line' : 'not access log lines'),
  'out of time order': (count) =>
    `more than ${DEFAULTS.whatIfReorderSeconds} s older than a line above ${count === 1 ? 'it' : 'them'}`,
};

/** `skipped 3 lines: 2 longer than 65,536 bytes (the first: line 7); …`, or '' when none was. */
function skippedText(skipped: WhatIfReport['trace']['skipped']): string {
  const parts = Object.entries(skipped).map(
    ([reason, { lines, firstLine, firstText }]) =>
      `${number(lines)} ${SKIPPED_AS[reason as SkipReason](lines)} (the first: line ${number(firstLine)}${firstText === undefined ? '' : `, ${JSON.stringify(firstText)}`})`,
  );
  const total = Object.values(skipped).reduce((sum, { lines }) => sum + lines, 0);
  return total === 0 ? '' : `skipped ${number(total)} line${total === 1 ? '' : 's'}: ${parts.join('; ')}`;
}

/** The log, opened, and its size when it is a file (not a pipe); a directory is refused here rather than at its first read. */
async function openLog(path: string): Promise<{ readonly handle: FileHandle; readonly bytes?: number }> {
  const handle = await open(path);
  const stats = await handle.stat();
  if (stats.isDirectory()) {
    await handle.close();
    throw Object.assign(new Error(`EISDIR: illegal operation on a directory`), { code: 'EISDIR' });
  }
  return stats.isFile() ? { handle, bytes: stats.size } : { handle };
}

function uncountedText(uncounted: WhatIfReport['current']['uncounted']): string {
  const parts = Object.entries(uncounted).map(([reason, count]) => `${reason} ${number(count)}`);
  return parts.length > 0 ? `; not counted: ${parts.join(', ')}` : '';
}

function clientLines(event: EventChange): string[] {
  const lines: string[] = [];
  const list = (title: string, clients: readonly ClientChange[], count: number) => {
    if (count === 0) return;
    lines.push(
      '',
      `${event.event}: ${number(count)} client${count === 1 ? '' : 's'} ${title}${count > clients.length ? ` (the ${clients.length} most changed)` : ''}`,
    );
    lines.push(
      ...table([
        ['  client', 'requests', 'denied in use', 'denied new'],
        ...clients.map((c) => [`  ${c.client}`, number(c.requests), number(c.deniedNow), number(c.deniedNew)]),
      ]),
    );
  };
  list('newly refused', event.newlyRefused, event.newlyRefusedCount);
  list('newly admitted', event.newlyAdmitted, event.newlyAdmittedCount);
  return lines;
}

/** Columns padded to their widest cell; numbers right-aligned. */
function table(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? [];
  return rows.map((row) =>
    row
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}
