// Validates a policy file and prints what it costs Memcached, before you deploy it.
//   npm run policies -- config/policies.yaml
import { formatDuration } from '../src/config/duration.js';
import { loadPolicyFile, PolicyError } from '../src/config/policies.js';
import { planEvents } from '../src/counting/plan.js';
import { policySizing } from '../src/counting/sizing.js';

const path = process.argv[2];
if (!path || path.startsWith('-')) {
  console.error('usage: npm run policies -- FILE   (a YAML or JSON policy file)');
  process.exit(2);
}

try {
  const policies = await loadPolicyFile(path);
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
    rows.push([`  ${event.event}: ${increments} and up to ${event.keysPerCheck.max} keys per check, ${event.itemsPerFeature} items per active feature`]);
  }
  const widths = rows[0]?.map((_, column) => Math.max(...rows.filter((r) => r.length > 1).map((r) => r[column]?.length ?? 0))) ?? [];
  console.log(`${path}: ${sizing.events.length} events, valid\n`);
  for (const row of rows) console.log(row.length === 1 ? row[0] : row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  '));
} catch (error) {
  console.error(error instanceof PolicyError ? error.message : String(error));
  process.exit(1);
}
