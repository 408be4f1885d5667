import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FileReadError, readBoundedText, readWithin } from './policy-files.js';

const folder = mkdtempSync(join(tmpdir(), 'memgate-policy-files-'));
afterAll(() => {
  rmSync(folder, { recursive: true, force: true });
});

function fifo(name: string): string {
  const path = join(folder, name);
  execFileSync('mkfifo', [path]);
  return path;
}

describe('readBoundedText', () => {
  it('reads a regular file', async () => {
    const path = join(folder, 'ok.yaml');
    writeFileSync(path, 'events: {}\n');
    await expect(readBoundedText(path)).resolves.toBe('events: {}\n');
  });

  it('refuses a FIFO at once, without opening it (an open waits for a writer forever)', async () => {
    const started = performance.now();
    await expect(readBoundedText(fifo('policies.yaml'))).rejects.toThrow(
      new FileReadError('not a regular file: a FIFO (named pipe)'),
    );
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('refuses a directory, a missing file and a file over the size bound', async () => {
    await expect(readBoundedText(folder)).rejects.toThrow('not a regular file: a directory');
    await expect(readBoundedText(join(folder, 'missing.yaml'))).rejects.toThrow(/^cannot read the file: ENOENT/);
    const large = join(folder, 'large.yaml');
    writeFileSync(large, 'x'.repeat(2048));
    await expect(readBoundedText(large, { maxBytes: 1024, deadlineMs: 5000 })).rejects.toThrow(
      '2048 bytes, more than the 1024 a file may be; not read',
    );
  });

  it('fails a read past its deadline, fails the next at once while it hangs, and reads again once it returns', async () => {
    // A real hang: the open of a FIFO with no writer, as a hung file system's read would.
    const path = fifo('hung.yaml');
    const read = () => readFile(path, 'utf8');
    const started = performance.now();
    await expect(readWithin(path, 200, read)).rejects.toThrow('not read within 200 ms (a hung file system?)');
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    await expect(readWithin(path, 200, read)).rejects.toThrow(/^a read begun 0 s ago has not returned/);
    // The writer comes: the hung read returns, and the file can be read again.
    const writer = await open(path, 'w');
    await writer.write('events: {}\n');
    await writer.close();
    await expect.poll(() => readWithin(path, 200, () => Promise.resolve('again')).catch(() => 'refused')).toBe('again');
  });
});
