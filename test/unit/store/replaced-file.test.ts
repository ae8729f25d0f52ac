/**
 * A database file deleted or replaced under an open connection: SQLite would go on committing
 * to the unlinked file, and every record from then on would vanish with the process. The
 * connection refuses to commit instead (the records stay where they came from, in Redis).
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { callEvent, seedRun, useTempStores } from './helpers.ts';

describe('a database file deleted or replaced while open', () => {
  const stores = useTempStores();

  it('is written no more: the batch fails, saying why', () => {
    const store = stores.open();
    const { runId } = seedRun(store);
    expect(store.applyEvents([callEvent(runId, 't0')]).calls).toBe(1);
    for (const suffix of ['', '-wal', '-shm']) fs.rmSync(`${store.path}${suffix}`, { force: true });
    expect(() => store.applyEvents([callEvent(runId, 't0')])).toThrow(
      expect.objectContaining({ code: 'STORE_REPLACED', exitCode: 3 }),
    );
    // Another file in its place (a restore, another tool): refused too.
    const other = stores.open();
    fs.copyFileSync(other.path, store.path);
    expect(() => store.applyEvents([callEvent(runId, 't0')])).toThrow(
      /deleted or replaced while harvest had it open/,
    );
  });
});
