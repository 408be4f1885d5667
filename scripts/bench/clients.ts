// What per-client rules cost a check: limiter.check on the embedded store in this process, no
// HTTP, for an event without rules and for events with 10,000 overrides, a tier, lists and a
// limit in shadow (tinybench). The matching itself is a map lookup per distinct prefix length
// and network size (src/config/feature-match.ts).
import { markdownTable } from 'markdown-table';
import { Bench } from 'tinybench';
import { memgateModules } from './compiled.js';
import type { Suite } from './suite.js';

const CHECKS_PER_CALL = 100;
const HIGH_LIMIT = 1_000_000_000;

/** 5,000 prefix overrides over 4 lengths and 5,000 /24 networks, each with a limit of its own. */
function tenThousandOverrides(): object[] {
  const overrides: object[] = [];
  for (let i = 0; i < 5000; i++)
    overrides.push({ match: { prefix: `tenant-${i}/` }, limits: [{ limit: HIGH_LIMIT - i, window: '60s' }] });
  for (let i = 0; i < 5000; i++)
    overrides.push({
      match: { cidr: `10.${i >> 8}.${i & 255}.0/24` },
      limits: [{ limit: HIGH_LIMIT - i, window: '60s' }],
    });
  return overrides;
}

interface Case {
  readonly name: string;
  readonly policy: object;
  /** The features checked in turn. */
  readonly features: readonly string[];
  readonly tier?: string;
}

export async function benchClientRules(milliseconds = 2000): Promise<{ name: string; checksPerSecond: number }[]> {
  const { createLimiter, createEmbeddedStore } = await memgateModules();
  const plain = { limits: [{ limit: HIGH_LIMIT, window: '60s' }] };
  const ruled = {
    ...plain,
    overrides: tenThousandOverrides(),
    tiers: { pro: { limits: [{ limit: HIGH_LIMIT, window: '60s' }] } },
    allow: [{ feature: 'monitor' }],
    deny: [{ prefix: 'banned:' }],
  };
  const users = Array.from({ length: 64 }, (_, i) => `user-${i}@example.com`);
  const cases: Case[] = [
    { name: 'no per-client rules (the baseline)', policy: plain, features: users },
    { name: '10,000 overrides: a client none matches', policy: ruled, features: users },
    {
      name: '10,000 overrides: a client a prefix matches',
      policy: ruled,
      features: users.map((_, i) => `tenant-${i * 70}/u`),
    },
    {
      name: '10,000 overrides: an IPv4 client a network matches',
      policy: ruled,
      features: users.map((_, i) => `10.${i}.${i}.7`),
    },
    { name: '10,000 overrides: a client of tier pro', policy: ruled, features: users, tier: 'pro' },
    {
      name: 'a limit in shadow beside the enforced one',
      policy: {
        limits: [
          { limit: HIGH_LIMIT, window: '60s' },
          { name: 'tried', limit: HIGH_LIMIT, window: '10s', mode: 'shadow' },
        ],
      },
      features: users,
    },
  ];
  const bench = new Bench({ time: milliseconds });
  for (const { name, policy, features, tier } of cases) {
    const limiter = createLimiter({ policies: { events: { bench: policy } }, store: createEmbeddedStore() });
    let next = 0;
    bench.add(name, async () => {
      for (let i = 0; i < CHECKS_PER_CALL; i++)
        await limiter.check({ event: 'bench', feature: features[next++ % features.length] as string, tier });
    });
  }
  await bench.run();
  return bench.tasks.map((task) => ({
    name: task.name,
    checksPerSecond: task.result.state === 'completed' ? Math.round(task.result.throughput.mean * CHECKS_PER_CALL) : 0,
  }));
}

export const clientRules: Suite = {
  name: 'clients',
  about: 'what tiers, 10,000 overrides, lists and a shadow limit cost limiter.check, in process (tinybench)',
  estimateSeconds: () => 20,

  run: async ({ doing }) => {
    doing('clients: limiter.check with per-client rules');
    const results = await benchClientRules();
    const base = results[0]?.checksPerSecond ?? 1;
    const table = markdownTable(
      [
        ['event', 'checks/s', 'µs/check', 'vs no rules'],
        ...results.map((r) => [
          r.name,
          String(r.checksPerSecond),
          (1e6 / Math.max(1, r.checksPerSecond)).toFixed(2),
          `${(base / Math.max(1, r.checksPerSecond)).toFixed(2)}×`,
        ]),
      ],
      { align: ['l', 'r', 'r', 'r'] },
    );
    const markdown = `## Per-client rules

Produced by \`npm run bench -- --suite clients\`.

\`limiter.check\` on the embedded store in one process, no HTTP (tinybench, 2 s per case, 100 checks per timed call), 64 clients in turn: an event without per-client rules, and one with 10,000 overrides (5,000 prefixes over four lengths and 5,000 /24 networks), a tier, an allow and a deny list. Matching is a map lookup per distinct prefix length and network size, so the number of rules does not set the cost; an address costs more to match than a name (ipaddr.js parses it).

${table}

A limit in shadow beside enforced ones counts apart from them: a second counter, decided with the first as one request (the way Envoy's several descriptors are), which is the last row's cost for as long as the limit is tried. An event whose limits are all in shadow is one counter, as the first row.
`;
    return { markdown, summary: table };
  },
};
