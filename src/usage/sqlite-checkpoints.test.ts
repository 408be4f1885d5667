// Checkpoints in a worker thread: what a connection without autocheckpoint writes reaches
// the file, and the worker's end leaves nothing behind in the WAL.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import { describe, expect, it } from 'vitest';
import { walCheckpoints } from './sqlite-checkpoints.js';

describe('WAL checkpoints in a worker', () => {
  it('copy what the connection wrote into the file, as often as asked, one at a time', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'memgate-checkpoints-'));
    const path = join(dir, 'usage.db');
    const db = new Database(path);
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA wal_autocheckpoint = 0');
    db.exec('CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)');
    const errors: Error[] = [];
    const checkpoints = walCheckpoints(path, { onError: (e) => errors.push(e), onStopped: (e) => errors.push(e) });
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    for (let round = 0; round < 5; round++) {
      db.transaction(() => {
        for (let i = 0; i < 2000; i++) insert.run('x'.repeat(1024));
      })();
      // Asked for while one runs: one more after it, not one per call.
      checkpoints.soon();
      checkpoints.soon();
    }
    await checkpoints.idle();
    const last = checkpoints.last;
    expect(last?.log).toBeGreaterThan(1000);
    expect(last?.checkpointed).toBe(last?.log);
    // 10,000 rows of 1 KB are in the file itself, not only in its WAL.
    expect(statSync(path).size).toBeGreaterThan(10_000 * 1024);
    await checkpoints.close();
    expect(errors).toEqual([]);
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
