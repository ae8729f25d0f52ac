/** When an export may fill the bytes it wrote to a stream again (`copies`). */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { streamOutput } from '../../../src/report/export/output.ts';

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
