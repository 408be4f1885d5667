import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { TestContext } from 'vitest';

/** shared/ beside the repository: data too large to keep in it, such as the NASA trace. */
const SHARED = new URL('../../../shared/', import.meta.url);

/** Whether this run is CI's, which always has shared/ beside its clone. */
export const IN_CI = process.env.CI === 'true' || process.env.CI === '1';

/**
 * A file in ../shared for the calling test. A lone clone has no shared/: there the test is
 * skipped, naming the file it lacks. Under CI=true it fails instead, so a missing file
 * never passes as a test that ran.
 */
export function sharedFile(test: TestContext, path: string): URL {
  const url = new URL(path, SHARED);
  if (!existsSync(url)) {
    const missing = `${fileURLToPath(url)} is missing: shared/ must sit beside the repository`;
    if (IN_CI) throw new Error(missing);
    // The summary only counts skips: say which file, and why, where it shows.
    process.stderr.write(`skipped: ${missing}\n`);
    test.skip(missing);
  }
  return url;
}
