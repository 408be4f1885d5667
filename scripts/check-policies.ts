// Validates a policy file and prints what it costs Memcached, before you deploy it.
//   npm run policies -- config/policies.yaml
import { stat } from 'node:fs/promises';
import { formatDuration } from '../src/config/duration.js';
import { loadPolicyFile, PolicyError } from '../src/config/policies.js';
import { planEvents } from '../src/counting/plan.js';
import { policySizing } from '../src/counting/sizing.js';
import { EXIT, fileProblem, runCommand } from './lib/command-line.js';

const USAGE = `usage: npm run policies -- FILE

  FILE    a YAML or JSON policy file (JSON when it ends in .json)

Prints each limit with the keys a check reads and the Memcached items an active feature
keeps, and exits 0; exits 1 listing every problem of an invalid file, 2 when FILE cannot
be read.`;

runCommand(
  { name: 'policies', usage: USAGE, options: {}, positionals: { min: 1, max: 1, name: 'FILE' } },
  async ({ positionals, fail }) => {
    const path = positionals[0] ?? fail('missing FILE');
    if (path === '-') fail('give a policy file by its path; standard input is not read');
    const file = await stat(path).catch((error: unknown) => fail(`cannot read ${path}: ${fileProblem(error)}`));
    if (!file.isFile()) fail(`${path} is not a file`);

    let policies;
    try {
      policies = await loadPolicyFile(path);
    } catch (error) {
      if (!(error instanceof PolicyError)) throw error;
      // The problems are this command's answer, not an error of its own: every one, as listed.
      console.error(error.message);
      return EXIT.failed;
    }
    const sizing = policySizing(policies, planEvents(policies));
    const rows = [['event', 'limit', 'algorithm', 'window', 'buckets', 'keys/check max', 'mean', 'items/feature']];
    for (const event of sizing.events) {
      for (const limit of event.limits) {
        rows.push([
          event.event,
          `${limit.name} (${limit.limit})`,
          'edge' in event ? `${event.algorithm}, ${event.edge} edge` : event.algorithm,
          formatDuration(limit.window),
          limit.bucketSizes.map(formatDuration).join(' '),
          String(limit.keysPerCheck.max),
          String(limit.keysPerCheck.mean),
          String(limit.itemsPerFeature),
        ]);
      }
      const increments = `${event.incrementsPerCheck} increment${event.incrementsPerCheck === 1 ? '' : 's'}`;
      rows.push([
        `  ${event.event}: ${increments} and up to ${event.keysPerCheck.max} keys per check, ${event.itemsPerFeature} items per active feature`,
      ]);
    }
    const widths =
      rows[0]?.map((_, column) => Math.max(...rows.filter((r) => r.length > 1).map((r) => r[column]?.length ?? 0))) ??
      [];
    console.log(`${path}: ${sizing.events.length} events, valid\n`);
    for (const row of rows)
      console.log(row.length === 1 ? row[0] : row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  '));
    return EXIT.ok;
  },
);
