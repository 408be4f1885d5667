// `memgate usage`: usage history in a terminal, what /dashboard draws, for people on a server
// without a browser. Asks a running memgate's GET /usage (and /usage/top) and prints
// sparklines, a table or the JSON.
//   memgate usage --event login --from -1h
import { EXIT, runCommand } from './command-line.js';
import { outputFile, writeOutput } from './output.js';
import { memgateClient } from './usage-client.js';
import { renderSpark, renderTable, renderTop, sparkWidth } from './usage-render.js';

const DEFAULT_URL = 'http://127.0.0.1:8080';
const FORMATS = ['spark', 'table', 'json'] as const;
/** Columns assumed when standard output is not a terminal and COLUMNS is not set. */
const DEFAULT_COLUMNS = 80;

const USAGE = `usage: memgate usage --event EVENT [options]

  --event EVENT       the event whose decisions to show (GET /usage/events lists them)
  --url URL           the memgate to ask (default $MEMGATE_URL, else ${DEFAULT_URL})
  --feature CLIENT    one client's curve instead of the whole event's
  --from TIME         start: epoch seconds, ISO 8601, or relative such as -1h, -30d
                      (default: an hour before --until)
  --until TIME        end (default now)
  --step S            seconds per point (default: as many points as fit, see --max-points)
  --max-points N      the most points wanted when no --step is given (default: what fits
                      the terminal's width, ${sparkWidth(DEFAULT_COLUMNS)} when it is not one)
  --top N             also list the N heaviest clients, allowed and denied, of the range
  --format F          spark: a line of totals, a sparkline per outcome (allowed, denied,
                      degraded; and shadow, the allowed a limit in shadow mode would
                      have denied, when there are any; and cost, the actual cost of
                      the reservations settled, when some were) with its min and
                      max, and a time axis, in UTC;
                      table: a row per point and their total (a shadow_denied column
                      when there are any; settled and settled_cost columns when some
                      reservation was settled);
                      json: memgate's answer as it sent it ({"usage": …, "top": …} with --top)
                      (default spark on a terminal, table otherwise)
  --out FILE          write there instead of standard output (- for standard output)

Times and steps are memgate's to read: what it refuses (400) is printed as its one-line
message, with exit 2, as bad usage is. Exits 0 once printed, 1 when memgate does not
answer or cannot (its usage history off: 404), 2 for bad usage.`;

/** Runs `memgate usage` on `args`, the arguments after its name. */
export function runUsage(args: readonly string[]): void {
  runCommand(
    {
      name: 'usage',
      invocation: 'memgate usage',
      args,
      usage: USAGE,
      options: {
        url: { type: 'string' },
        event: { type: 'string' },
        feature: { type: 'string' },
        from: { type: 'string' },
        until: { type: 'string' },
        step: { type: 'string' },
        'max-points': { type: 'string' },
        top: { type: 'string' },
        format: { type: 'string' },
        out: { type: 'string' },
      },
    },
    async ({ values, fail, positiveInteger }) => {
      const event = values.event ?? fail('--event is required');
      const url = values.url ?? process.env.MEMGATE_URL ?? DEFAULT_URL;
      const base = httpUrl(url) ?? fail(`--url must be an http URL (got ${JSON.stringify(url)})`);
      const format =
        values.format === undefined
          ? undefined
          : (FORMATS.find((name) => name === values.format) ??
            fail(`--format must be one of ${FORMATS.join(', ')} (got ${JSON.stringify(values.format)})`));
      const top = values.top === undefined ? undefined : positiveInteger(values.top, 'top', 1);
      const out = await outputFile(values.out ?? '-');
      const terminal = out.kind === 'stdout' && process.stdout.isTTY;
      const columns = (terminal ? process.stdout.columns : Number(process.env.COLUMNS)) || DEFAULT_COLUMNS;
      // A step asked wins; else memgate picks a round step for as many points as a row holds.
      const maxPoints =
        values['max-points'] === undefined
          ? values.step === undefined
            ? sparkWidth(columns)
            : undefined
          : positiveInteger(values['max-points'], 'max-points', 1);

      const memgate = memgateClient(base);
      const range = { event, from: values.from, until: values.until };
      const [series, heaviest] = await Promise.all([
        memgate.series({ ...range, feature: values.feature, step: values.step, maxDataPoints: maxPoints?.toString() }),
        top === undefined ? undefined : memgate.top({ ...range, limit: String(top) }),
      ]);
      let text: string;
      switch (format ?? (terminal ? 'spark' : 'table')) {
        case 'json':
          text = heaviest ? `{"usage":${series.text},"top":${heaviest.text}}` : series.text;
          break;
        case 'spark':
          text = [renderSpark(series.body, columns), ...(heaviest ? [renderTop(heaviest.body)] : [])].join('\n\n');
          break;
        case 'table':
          text = [renderTable(series.body), ...(heaviest ? [renderTop(heaviest.body)] : [])].join('\n\n');
          break;
      }
      await writeOutput(out, text);
      return EXIT.ok;
    },
  );
}

function httpUrl(text: string): URL | undefined {
  const url = URL.canParse(text) ? new URL(text) : undefined;
  return url?.protocol === 'http:' || url?.protocol === 'https:' ? url : undefined;
}
