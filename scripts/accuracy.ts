// The accuracy lab: replays traffic through memgate's limiter under several bucket
// granularities and edge rules, a fixed window and token buckets, beside an exact sliding
// log, and reports how each errs.
//   npm run accuracy -- --help
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { availableParallelism } from 'node:os';
import { parseDuration } from '../src/config/duration.js';
import { parseClf, type ParsedLog } from './accuracy/clf.js';
import { replay } from './accuracy/replay.js';
import { charts, markdownReport, replayRates, runHeading, runTable, type LabRun } from './accuracy/report.js';
import { openStore, type StoreChoice } from './accuracy/scheme-replay.js';
import { schemesFor } from './accuracy/schemes.js';
import { SHAPES, type TimedRequest } from './accuracy/traffic.js';
import { EXIT, fileProblem, runCommand, UsageError } from '../src/commands/command-line.js';
import { outputDirectory } from '../src/commands/output.js';
import { progressIntervalMs, startProgress } from './lib/progress.js';

const USAGE = `usage: npm run accuracy -- [options]

  --window W          one window to study, e.g. 60s or 1d (default: a 1m suite and a 1d suite)
  --limit N           the limit per window (default 10 per minute, 1000 per day)
  --requests N        requests per generated shape (default 100000)
  --seed N            seed of the generated traffic (default 1)
  --shapes a,b|none   generated shapes: ${SHAPES.map((s) => s.name).join(', ')}
                      (default: all but diurnal for windows under a day; diurnal for a day)
  --trace FILE        also replay a Common Log Format file: host = client (repeatable)
  --trace-limit N     the limit for traces (default 10 per window)
  --subsecond         generated timestamps in milliseconds rather than whole seconds
  --store memcached   count in MEMCACHED_SERVERS instead of the embedded store (slower)
  --workers N         threads to spread the schemes over (default: one per core)
  --out DIR           the directory report.md and the SVG charts go to, made if missing
                      (default accuracy-report); - writes report.md to standard output
                      instead, without charts (use npm run --silent to keep npm's own
                      lines out of it)

Prints a table per traffic (unless --out -) and progress on standard error. Exits 0 once
the report is written, 1 when the replay fails (a Memcached that does not answer), 2 for
bad usage.`;

interface Suite {
  readonly window: number;
  readonly limit: number;
  readonly shapes: readonly string[];
}

/** One traffic to replay, with the limit it runs against. */
interface Job {
  readonly traffic: string;
  readonly description: string;
  readonly window: number;
  readonly limit: number;
  readonly requests: readonly TimedRequest[];
}

runCommand(
  {
    name: 'accuracy',
    usage: USAGE,
    options: {
      window: { type: 'string' },
      limit: { type: 'string' },
      requests: { type: 'string' },
      seed: { type: 'string' },
      shapes: { type: 'string' },
      trace: { type: 'string', multiple: true },
      'trace-limit': { type: 'string' },
      subsecond: { type: 'boolean' },
      store: { type: 'string' },
      out: { type: 'string' },
      workers: { type: 'string' },
    },
  },
  async ({ values, fail, positiveInteger }) => {
    const requestsPerShape = positiveInteger(values.requests, 'requests', 100_000);
    const seed = positiveInteger(values.seed, 'seed', 1);
    const traceLimit = positiveInteger(values['trace-limit'], 'trace-limit', 10);
    const workers = positiveInteger(values.workers, 'workers', availableParallelism());
    if (values.store !== undefined && values.store !== 'memcached' && values.store !== 'embedded')
      fail('--store is embedded or memcached');
    const memcachedServers = process.env.MEMCACHED_SERVERS;
    if (values.store === 'memcached' && !memcachedServers) fail('--store memcached needs MEMCACHED_SERVERS=host:port');

    /** The diurnal shape spans days; the others are about minutes. */
    const naturalFor = (window: number) => (name: string) => window >= 86_400 === (name === 'diurnal');
    const named =
      values.shapes === undefined
        ? undefined
        : values.shapes === 'none'
          ? []
          : values.shapes.split(',').map((name) => name.trim());
    for (const name of named ?? []) {
      if (!SHAPES.some((s) => s.name === name))
        fail(`unknown shape ${JSON.stringify(name)}; the shapes are ${SHAPES.map((s) => s.name).join(', ')}`);
    }
    /** With --window, every named shape runs at it; without, each runs in its natural suite. */
    const chosenShapes = (window: number, fixedWindow: boolean): string[] =>
      named === undefined
        ? SHAPES.map((s) => s.name).filter(naturalFor(window))
        : fixedWindow
          ? named
          : named.filter(naturalFor(window));

    let suites: Suite[];
    if (values.window !== undefined) {
      const window =
        parseDuration(values.window) ??
        fail(`--window must be a duration like 60s, 5m or 1d (got ${JSON.stringify(values.window)})`);
      suites = [
        {
          window,
          limit: positiveInteger(values.limit, 'limit', window >= 86_400 ? 1000 : 10),
          shapes: chosenShapes(window, true),
        },
      ];
    } else {
      suites = [
        { window: 60, limit: positiveInteger(values.limit, 'limit', 10), shapes: chosenShapes(60, false) },
        { window: 86_400, limit: positiveInteger(values.limit, 'limit', 1000), shapes: chosenShapes(86_400, false) },
      ].filter((suite) => suite.shapes.length > 0 || suite.window === 60);
    }
    const traces: { path: string; log: ParsedLog }[] = [];
    for (const path of values.trace ?? []) {
      const text = await readFile(path, 'utf8').catch((error: unknown) =>
        fail(`cannot read the trace ${path}: ${fileProblem(error)}`),
      );
      traces.push({ path, log: parseClf(text) });
    }
    if (suites.every((suite) => suite.shapes.length === 0) && traces.length === 0)
      fail('nothing to replay: choose --shapes or give a --trace');
    const everyMs = progressIntervalMs();
    const store: StoreChoice =
      values.store === 'memcached' && memcachedServers
        ? { kind: 'memcached', servers: memcachedServers }
        : { kind: 'embedded' };
    if (store.kind === 'memcached') await checkAnswers(store);
    // Last, since it makes the directory: everything else has been checked.
    const out = await outputDirectory(values.out ?? 'accuracy-report');

    const jobs: Job[] = [];
    for (const suite of suites) {
      for (const name of suite.shapes) {
        const shape = SHAPES.find((s) => s.name === name);
        if (!shape) continue;
        const requests = shape.generate({
          seed,
          requests: requestsPerShape,
          limit: suite.limit,
          window: suite.window,
          resolutionMs: values.subsecond ? 1 : 1000,
        });
        jobs.push({
          traffic: name,
          description: shape.description,
          window: suite.window,
          limit: suite.limit,
          requests,
        });
      }
    }
    for (const { path, log } of traces) {
      const unreadable =
        log.unparseable === 0
          ? ''
          : `; ${log.unparseable} unparseable lines skipped (first: ${JSON.stringify(log.firstUnparseable)})`;
      if (log.unparseable > 0)
        console.error(
          `${path}: ${log.unparseable} lines are not Common Log Format and were skipped; first: ${log.firstUnparseable ?? ''}`,
        );
      jobs.push({
        traffic: path.split('/').pop() ?? path,
        description: `Common Log Format trace ${path}${unreadable}`,
        window: suites[0]?.window ?? 60,
        limit: traceLimit,
        requests: log.requests,
      });
    }

    // Replay them all, with one progress over every check of every scheme.
    const schemeChecks = (job: Job) => job.requests.length * schemesFor(job.window).length;
    const total = jobs.reduce((sum, job) => sum + schemeChecks(job), 0);
    const progress = startProgress({
      label: 'replaying',
      total,
      describe: (done, all) => `${done.toLocaleString('en')} of ${all.toLocaleString('en')} checks`,
      everyMs,
    });
    const started = performance.now();
    const runs: LabRun[] = [];
    try {
      let offset = 0;
      for (const job of jobs) {
        progress.update(offset, job.traffic);
        const result = await replay(job.requests, {
          limit: job.limit,
          window: job.window,
          schemes: schemesFor(job.window),
          store,
          workers,
          onProgress: (done) => {
            progress.update(offset + done);
          },
        });
        offset += schemeChecks(job);
        runs.push({ traffic: job.traffic, description: job.description, limit: job.limit, window: job.window, result });
      }
      progress.done();
    } finally {
      progress.stop();
    }
    const seconds = (performance.now() - started) / 1000;
    const checks = runs.reduce((sum, run) => sum + run.result.requests * run.result.schemes.length, 0);
    const requests = jobs.reduce((sum, job) => sum + job.requests.length, 0);
    const timing = [
      `${requests.toLocaleString('en')} requests through ${checks.toLocaleString('en')} limiter checks in ${seconds.toFixed(1)} s on ${workers} thread${workers === 1 ? '' : 's'}`,
      replayRates(runs, seconds, workers),
    ].join('\n');
    const command = `npm run accuracy --${process.argv.length > 2 ? ` ${process.argv.slice(2).join(' ')}` : ''}`;

    if (out.kind === 'stdout') {
      // The report holds the tables; the terminal's copy would only be in its way.
      console.error(timing);
      process.stdout.write(markdownReport(runs, command, []));
      return EXIT.ok;
    }
    for (const run of runs) console.log(`\n${runHeading(run)}\n\n${runTable(run)}`);
    console.log(`\n${timing}`);
    const drawn = await charts(runs);
    for (const chart of drawn) await writeFile(join(out.path, chart.file), chart.svg);
    await writeFile(join(out.path, 'report.md'), markdownReport(runs, command, drawn));
    console.log(`report: ${join(out.path, 'report.md')} and ${drawn.length} charts`);
    return EXIT.ok;
  },
);

/** Refuses a MEMCACHED_SERVERS that does not parse (exit 2) or does not answer (exit 1) before any work. */
async function checkAnswers(store: StoreChoice & { kind: 'memcached' }): Promise<void> {
  let probe;
  try {
    probe = openStore(store, Date.now);
  } catch (error) {
    throw new UsageError(`MEMCACHED_SERVERS: ${(error as Error).message}`, { cause: error });
  }
  try {
    await probe.ping();
  } catch (error) {
    throw new Error(`Memcached does not answer: ${(error as Error).message}`, { cause: error });
  } finally {
    await probe.close();
  }
}
