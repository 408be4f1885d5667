// Loaded into `memgate what-if` by the what-if bench (node --import): its peak resident memory,
// as getrusage counts it (KiB), on standard error as the process exits.
import process from 'node:process';

process.on('exit', () => {
  process.stderr.write(`peak-rss-kib ${process.resourceUsage().maxRSS}\n`);
});
