// Exact in both directions, measured from outside: two memgate services share one Memcached,
// and requests that race for the last room of a limit arrive at both at once. Each scenario
// is one issue 23 names; each run uses fresh clients. With --baseline, the same runs against
// another commit's build, alternating, for the figures before and after.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { markdownTable } from 'markdown-table';
import { request } from 'undici';
import { freePort } from '../lib/memcached-process.js';
import { rlsClient, type RlsClient, type WireRequestIn } from '../lib/rls-client.js';
import { baselineBuild } from './baseline.js';
import { startService, type Measured } from './processes.js';
import { median, type Suite } from './suite.js';

/** Runs of each scenario, as issue 23 asks. */
const RUNS = 20;
const LIMIT = 30;
const ROOM = 5;
const USER_LIMIT = 5;

const POLICIES = `events:
  mixed: { limits: [{ limit: ${LIMIT}, window: 1m }] }
  leased:
    limits: [{ limit: ${LIMIT}, window: 1m }]
    lease: { maxUnits: 10, life: 5s }
`;
const ENVOY = `domain: exact
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: ${USER_LIMIT} }
  - key: tenant
    rate_limit: { unit: hour, requests_per_unit: 1 }
`;

/** Two services of one build sharing the Memcached. */
interface Pair {
  readonly name: string;
  readonly http: readonly [URL, URL];
  readonly grpc: readonly [RlsClient, RlsClient];
  stop(): Promise<void>;
}

/** One run of a scenario: what it admitted, against what exactness asks. */
interface RunResult {
  readonly admitted: number;
  readonly expected: number;
  /** The longest retryAfter told to a request refused while room was left (0 when none was). */
  readonly falseDenialRetryAfter: number;
}

interface Scenario {
  readonly name: string;
  readonly what: string;
  run(pair: Pair, run: number): Promise<RunResult>;
}

async function post(url: URL, path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const answer = await request(new URL(path, url), {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  return { status: answer.statusCode, body: (await answer.body.json()) as Record<string, unknown> };
}

const unique = (what: string, run: number) => `${what}-${run}-${process.hrtime.bigint()}`;

const SCENARIOS: readonly Scenario[] = [
  {
    name: 'costs that never fit beside ones that do',
    what: `room for ${ROOM} left of ${LIMIT}; 50 requests of cost 6 and 50 of cost 1 at once: exactly ${ROOM} of cost 1 admitted`,
    async run(pair, run) {
      const feature = unique('mixed', run);
      for (let i = 0; i < LIMIT - ROOM; i++) await post(pair.http[i % 2] as URL, '/check', { event: 'mixed', feature });
      const answers = await Promise.all(
        Array.from({ length: 100 }, async (_, i) => {
          const cost = i % 2 === 0 ? 6 : 1;
          const answer = await post(pair.http[(i >> 1) % 2] as URL, '/check', { event: 'mixed', feature, cost });
          return { cost, ...answer };
        }),
      );
      const ones = answers.filter((a) => a.cost === 1);
      const admitted = ones.filter((a) => a.status === 200).length;
      // Cost 6 never fits in 5: one admitted would be past the limit, counted as such.
      const sixes = answers.filter((a) => a.cost === 6 && a.status === 200).length;
      return {
        admitted: admitted + sixes * 6,
        expected: ROOM,
        falseDenialRetryAfter: admitted < ROOM ? longestRetryAfter(ones) : 0,
      };
    },
  },
  {
    name: 'leases beside checks',
    what: `a ${LIMIT}/min event: 10 leases of 10 units and 20 checks at once: exactly ${LIMIT} units granted`,
    async run(pair, run) {
      const feature = unique('leased', run);
      const answers = await Promise.all(
        Array.from({ length: 30 }, async (_, i) => {
          const url = pair.http[i % 2] as URL;
          if (i % 3 === 0) {
            const answer = await post(url, '/lease', { event: 'leased', feature, units: 10 });
            const lease = answer.body.lease as { units: number } | undefined;
            return { units: answer.status === 200 ? (lease?.units ?? 0) : 0, ...answer };
          }
          const answer = await post(url, '/check', { event: 'leased', feature });
          return { units: answer.status === 200 ? 1 : 0, ...answer };
        }),
      );
      const granted = answers.reduce((sum, a) => sum + a.units, 0);
      return {
        admitted: granted,
        expected: LIMIT,
        falseDenialRetryAfter: granted < LIMIT ? longestRetryAfter(answers) : 0,
      };
    },
  },
  {
    name: 'Envoy descriptors with an exhausted tenant',
    what: `[user] and [user, exhausted tenant] ShouldRateLimit calls, 20 of each at once: exactly the user's ${USER_LIMIT} [user] calls admitted`,
    async run(pair, run) {
      const user = unique('user', run);
      const tenant = unique('tenant', run);
      const call = (client: RlsClient, descriptors: [string, string][]): Promise<boolean> => {
        const message: WireRequestIn = {
          domain: 'exact',
          descriptors: descriptors.map(([key, value]) => ({ entries: [{ key, value }] })),
        };
        return client.shouldRateLimit(message).then((answer) => answer.overall_code === 'OK');
      };
      await call(pair.grpc[0], [['tenant', tenant]]);
      const answers = await Promise.all(
        Array.from({ length: 40 }, async (_, i) => {
          const both = i % 2 === 0;
          const client = pair.grpc[(i >> 1) % 2] as RlsClient;
          const ok = await call(
            client,
            both
              ? [
                  ['user', user],
                  ['tenant', tenant],
                ]
              : [['user', user]],
          );
          return { both, ok };
        }),
      );
      const alone = answers.filter((a) => !a.both && a.ok).length;
      const withTenant = answers.filter((a) => a.both && a.ok).length;
      // A call naming the exhausted tenant admitted is past the tenant's limit.
      return { admitted: alone + withTenant * USER_LIMIT, expected: USER_LIMIT, falseDenialRetryAfter: 0 };
    },
  },
];

function longestRetryAfter(answers: readonly { status: number; body: Record<string, unknown> }[]): number {
  let longest = 0;
  for (const { status, body } of answers)
    if (status === 429 && typeof body.retryAfter === 'number') longest = Math.max(longest, body.retryAfter);
  return longest;
}

async function startPair(name: string, servers: string, root: string | undefined): Promise<Pair> {
  const dir = await mkdtemp(join(tmpdir(), 'memgate-exactness-'));
  await writeFile(join(dir, 'policies.yaml'), POLICIES);
  await writeFile(join(dir, 'envoy.yaml'), ENVOY);
  const ports = [await freePort(), await freePort()];
  const services: Measured[] = [];
  for (const port of ports)
    services.push(
      await startService(
        {
          MEMCACHED_SERVERS: servers,
          MEMGATE_CONFIG: join(dir, 'policies.yaml'),
          MEMGATE_ENVOY_CONFIG: join(dir, 'envoy.yaml'),
          MEMGATE_GRPC_PORT: String(port),
          MEMGATE_KEY_PREFIX: `x${process.pid}${name.replace(/[^A-Za-z0-9]/g, '').slice(0, 12)}`,
        },
        root === undefined ? {} : { root },
      ),
    );
  const grpc = ports.map((port) => rlsClient(`127.0.0.1:${port}`));
  return {
    name,
    http: [services[0]?.url, services[1]?.url] as [URL, URL],
    grpc: grpc as [RlsClient, RlsClient],
    async stop() {
      for (const client of grpc) client.close();
      await Promise.all(services.map((service) => service.stop()));
    },
  };
}

export const exactness: Suite = {
  name: 'exactness',
  about: `two services racing for the last room of a limit, ${RUNS} runs per scenario (--baseline REF: another commit beside)`,
  // A run is a burst of about a hundred requests: well under a second, two builds each.
  estimateSeconds: () => 5 + SCENARIOS.length * RUNS * 0.1,

  run: async ({ servers, progress, doing, baseline }) => {
    const builds: { name: string; root: string | undefined }[] = [{ name: 'this build', root: undefined }];
    if (baseline !== undefined) {
      doing(`exactness: building ${baseline}`);
      const built = await baselineBuild(baseline);
      builds.push({ name: built.commit, root: built.root });
    }
    const pairs: Pair[] = [];
    try {
      for (const build of builds) pairs.push(await startPair(build.name, servers, build.root));
      const results = new Map<string, RunResult[]>();
      for (const scenario of SCENARIOS) {
        for (let run = 1; run <= RUNS; run++) {
          // Builds in turn, so that neither has the quieter machine.
          for (const pair of pairs) {
            doing(`exactness: ${scenario.name}, run ${run}/${RUNS}, ${pair.name}`);
            const result = await scenario.run(pair, run);
            const key = `${scenario.name}|${pair.name}`;
            results.set(key, [...(results.get(key) ?? []), result]);
          }
        }
        for (const pair of pairs) {
          const list = results.get(`${scenario.name}|${pair.name}`) ?? [];
          progress(
            `exactness: ${scenario.name}, ${pair.name}: admitted ${list.map((r) => r.admitted).join(' ')} (exact: ${list[0]?.expected ?? '?'})`,
          );
        }
      }
      const rows = SCENARIOS.flatMap((scenario) =>
        pairs.map((pair) => {
          const list = results.get(`${scenario.name}|${pair.name}`) ?? [];
          const admitted = list.map((r) => r.admitted);
          const expected = list[0]?.expected ?? 0;
          const exact = list.filter((r) => r.admitted === r.expected).length;
          const told = Math.max(0, ...list.map((r) => r.falseDenialRetryAfter));
          return [
            scenario.name,
            pair.name,
            String(expected),
            `${Math.min(...admitted)} / ${median(admitted)} / ${Math.max(...admitted)}`,
            `${exact} of ${list.length}`,
            told === 0 ? '–' : `${told} s`,
          ];
        }),
      );
      const table = markdownTable(
        [
          [
            'scenario',
            'build',
            'exact',
            'admitted min / median / max',
            'runs exact',
            'longest retryAfter while room was left',
          ],
          ...rows,
        ],
        { align: ['l', 'l', 'r', 'r', 'r', 'r'] },
      );
      const markdown = `## Exact in both directions

Produced by \`npm run bench -- --suite exactness${baseline === undefined ? '' : ` --baseline ${baseline}`}\`.

Two memgate services (\`node dist/main.js\`) share one Memcached; each run sends its requests to both at once, for a client of its own, ${RUNS} runs per scenario${pairs.length > 1 ? ', the builds taking turns' : ''}. "Admitted" counts what the limit let through (a request that could never fit, admitted, counts as its cost, so over-admission shows too); exact is never more and never less. A refused request told a long \`retryAfter\` while the limit still had room is the false denial that \`memgate/client\` would then hold locally: the last column is the longest such \`retryAfter\`.

${SCENARIOS.map((scenario) => `- **${scenario.name}**: ${scenario.what}`).join('\n')}

${table}
`;
      return { markdown, summary: table };
    } finally {
      await Promise.all(pairs.map((pair) => pair.stop()));
    }
  },
};
