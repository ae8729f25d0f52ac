/**
 * When an export may fill the bytes it wrote to a stream again (`copies`); files an output must
 * never replace.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { databaseFiles, openFileOutput, streamOutput } from '../../../src/report/export/output.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('streamOutput', () => {
  it('never gives bytes back to a stream that may keep them (a PassThrough hands them on)', async () => {
    const stream = new PassThrough();
    const output = streamOutput(stream);
    const bytes = new TextEncoder().encode('row\n');
    await output.write(bytes);
    expect(stream.writableLength).toBe(0);
    expect(output.copies).toBe(false);
    // What the reader gets is the very buffer written: filling it again would change it.
    expect(stream.read()).toEqual(Buffer.from('row\n'));
  });

  it('gives bytes back to a stream on a file descriptor once it holds none of them', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'harvest-output-'));
    dirs.push(dir);
    const stream = fs.createWriteStream(path.join(dir, 'out.jsonl'));
    await new Promise((resolve) => stream.once('open', resolve));
    const output = streamOutput(stream);
    await output.write(new TextEncoder().encode('{"a":1}\n'));
    // The write is still on its way to the file.
    expect(output.copies).toBe(false);
    await new Promise<void>((resolve) => stream.write('', () => resolve()));
    expect(output.copies).toBe(true);
    await new Promise((resolve) => stream.end(resolve));
    expect(fs.readFileSync(path.join(dir, 'out.jsonl'), 'utf8')).toBe('{"a":1}\n');
  });
});

describe('openFileOutput', () => {
  it("refuses harvest's database and its companions, by name, through a link, or hard-linked", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'harvest-output-'));
    dirs.push(dir);
    const db = path.join(dir, 'data', 'harvest.db');
    fs.mkdirSync(path.dirname(db));
    fs.writeFileSync(db, 'the database');
    fs.symlinkSync(path.join(dir, 'data'), path.join(dir, 'via'));
    fs.linkSync(db, path.join(dir, 'hard.db'));
    const keep = databaseFiles(db);
    for (const out of [
      db,
      `${db}-wal`,
      `${db}-shm`,
      path.join(dir, 'data', '..', 'data', 'harvest.db'),
      path.join(dir, 'via', 'harvest.db'),
      path.join(dir, 'hard.db'),
    ]) {
      expect(() => openFileOutput(out, keep), out).toThrow(
        expect.objectContaining({ code: 'OUTPUT_IS_DATABASE', exitCode: 2 }),
      );
    }
    expect(fs.readFileSync(db, 'utf8')).toBe('the database');
    // No temporary file was left beside any of them.
    expect(fs.readdirSync(path.join(dir, 'data'))).toEqual(['harvest.db']);
    const other = openFileOutput(path.join(dir, 'data', 'costs.csv'), keep);
    other.abort();
  });
});
