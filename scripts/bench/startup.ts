// How long the service takes to start: from `node dist/main.js` to its start-up line (it
// listens), and the CPU its processes spent meanwhile. A restart, a rollout or a new instance
// behind an autoscaler waits that long before it answers; so does every test that starts one.
import { markdownTable } from 'markdown-table';
import { baselineOrWhyNot } from './baseline.js';
import { cpuMicros, startService } from './processes.js';
import { median, type Suite } from './suite.js';

/** The build before the service stopped loading what it was not configured to use. */
const A_B_COMMIT = '9d4145c';
/** Starts of each case per round. */
const STARTS = 3;

interface StartCase {
  readonly name: string;
  readonly env: (servers: string, start: number) => Record<string, string>;
}

const CASES: readonly StartCase[] = [
  { name: 'embedded store, no usage history', env: () => ({ MEMGATE_USAGE_DB: 'off' }) },
  {
    name: 'Memcached, usage history (as `npm start` runs it)',
    env: (servers, start) => ({ MEMCACHED_SERVERS: servers, MEMGATE_KEY_PREFIX: `st${process.pid}n${start}` }),
  },
];

interface Started {
  readonly ms: number;
  readonly cpuMs: number;
}

/** One start, timed to its start-up line, with what its launcher and service spent by then. */
async function timedStart(env: Record<string, string>, root: string | undefined): Promise<Started> {
  const started = performance.now();
  const service = await startService(env, root === undefined ? {} : { root });
  const ms = performance.now() - started;
  try {
    const pids = [service.pid, ...(service.launcherPid === undefined ? [] : [service.launcherPid])];
    const spent = await Promise.all(pids.map((pid) => cpuMicros(pid)));
    return { ms, cpuMs: spent.reduce((sum, { user, system }) => sum + user + system, 0) / 1000 };
  } finally {
    await service.stop();
  }
}

export const startup: Suite = {
  name: 'startup',
  about: 'the service from `node dist/main.js` to listening, embedded and on Memcached, against an older build',
  estimateSeconds: ({ rounds }) => rounds * CASES.length * 2 * STARTS * 2,

  run: async ({ servers, rounds, progress, doing, baseline }) => {
    doing(`startup: building ${baseline ?? A_B_COMMIT} for the A/B rows`);
    const older = await baselineOrWhyNot(baseline ?? A_B_COMMIT);
    if (older instanceof Error) progress(`startup: no A/B rows: ${older.message}`);
    const builds = [
      { label: 'this build', root: undefined },
      ...(older instanceof Error ? [] : [{ label: `@${older.commit}`, root: older.root }]),
    ];
    const runs = new Map<string, Started[]>();
    let start = 0;
    for (let round = 1; round <= rounds; round++) {
      // Reversed every other round: neither build always starts first.
      const order = round % 2 === 1 ? builds : [...builds].reverse();
      for (const startCase of CASES) {
        for (const build of order) {
          doing(`startup, round ${round}/${rounds}: ${startCase.name}, ${build.label}`);
          for (let i = 0; i < STARTS; i++) {
            const key = `${startCase.name}|${build.label}`;
            runs.set(key, [...(runs.get(key) ?? []), await timedStart(startCase.env(servers, start++), build.root)]);
          }
        }
      }
    }
    const rows = CASES.flatMap((startCase) =>
      builds.map((build) => {
        const measured = runs.get(`${startCase.name}|${build.label}`) ?? [];
        const times = measured.map(({ ms }) => ms);
        return [
          startCase.name,
          build.label,
          String(measured.length),
          String(Math.round(median(times))),
          `${Math.round(Math.min(...times))} to ${Math.round(Math.max(...times))}`,
          String(Math.round(median(measured.map(({ cpuMs }) => cpuMs)))),
        ];
      }),
    );
    for (const row of rows) progress(`startup: ${row[0] ?? ''}, ${row[1] ?? ''}: ${row[3] ?? ''} ms (median)`);
    const table = markdownTable(
      [['case', 'build', 'starts', 'to listening, ms (median)', 'range, ms', 'CPU ms (median)'], ...rows],
      { align: ['l', 'l', 'r', 'r', 'r', 'r'] },
    );
    const markdown = `## Start-up

Produced by \`npm run bench -- --suite startup --rounds ${rounds}\`${baseline ? ` (\`--baseline ${baseline}\`)` : ''}.

The memgate service as \`npm start\` runs it (\`node dist/main.js\`: the launcher, which starts the service as its child), timed from its spawn to its start-up line, which it writes once it listens; CPU is the launcher's and the service's user and system time by then, from \`/proc\`. On the embedded store without usage history, and on Memcached with usage history in a SQLite file, as \`npm start\` runs by default. Each start follows the last one's stop on the same Memcached, as in a rolling restart, and is stopped before the next. ${STARTS} starts of each case and build per round, the builds' order reversed every other round; the row named with \`@\` and a commit is the service as built there (\`--baseline REF\` names another).

${table}

On Memcached, a start also waits to take the time the instances agree on for the server (**Clocks** under [Failover](operations.md#failover)): it watches for a turn of the server's second, and for up to two more when the turn it saw was named by another instance before it.
`;
    return { markdown, summary: table };
  },
};
