import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const checkPolicies = (file: string) => run(process.execPath, ['--import', 'tsx', 'scripts/check-policies.ts', file]);

describe('npm run policies', () => {
  it('prints each limit with its keys per check and items per feature', async () => {
    const { stdout } = await checkPolicies('config/policies.yaml');
    expect(stdout).toContain('config/policies.yaml: 3 events, valid');
    expect(stdout).toMatch(/login-1d \(100\)\s+sliding, whole edge\s+1d\s+1h 1m 1s\s+142\s+83\b/);
    expect(stdout).toContain('export: 1 increment and up to 1 keys per check, 3 items per active feature');
  });

  it('fails with the problems of a bad file', async () => {
    const path = join(await mkdtemp(join(tmpdir(), 'memgate-')), 'bad.yaml');
    await writeFile(path, 'events:\n  a:\n    limits:\n      - { limit: 1, window: 1d, granularity: 7s }\n');
    await expect(checkPolicies(path)).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('event "a", field limits[0].window: 1d is not a multiple of the granularity 7s') as unknown });
  });
});
