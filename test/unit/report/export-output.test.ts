/**
 * When an export may fill the bytes it wrote to a stream again (`copies`); files an output must
 * never replace; what `--out` writes into (links followed, devices, FIFOs and sockets written in
 * place); partial files of exports that no longer run; failed writes.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { databaseFiles, openFileOutput } from '../../../src/report/export/file-output.ts';
import { descriptorOutput, streamOutput } from '../../../src/report/export/output.ts';
import {
  hostTag,
  partialPath,
  removeStalePartials,
  UNJUDGED_PARTIAL_AGE_MS,
} from '../../../src/report/export/partials.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'harvest-output-'));
  dirs.push(dir);
  return dir;
}

async function writeAll(file: string, text: string): Promise<void> {
  const output = await openFileOutput(file);
  await output.write(text);
  await output.commit();
}

/** The PID of a process that has ended. */
function deadPid(): number {
  const done = spawnSync(process.execPath, ['-e', '']);
  expect(done.status).toBe(0);
  return done.pid;
}

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
  it("refuses harvest's database and its companions, by name, through a link, or hard-linked", async () => {
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
      await expect(openFileOutput(out, keep), out).rejects.toThrow(
        expect.objectContaining({ code: 'OUTPUT_IS_DATABASE', exitCode: 2 }),
      );
    }
    expect(fs.readFileSync(db, 'utf8')).toBe('the database');
    // No temporary file was left beside any of them.
    expect(fs.readdirSync(path.join(dir, 'data'))).toEqual(['harvest.db']);
    const other = await openFileOutput(path.join(dir, 'data', 'costs.csv'), keep);
    other.abort();
  });
});

describe('openFileOutput: what is at the path', () => {
  it('follows a symbolic link to its file and keeps the link, a dangling one too', async () => {
    const dir = tempDir();
    fs.mkdirSync(path.join(dir, 'real'));
    fs.writeFileSync(path.join(dir, 'real', 'a.csv'), 'old');
    fs.symlinkSync(path.join('real', 'a.csv'), path.join(dir, 'a.csv'));
    fs.symlinkSync('a.csv', path.join(dir, 'b.csv'));
    await writeAll(path.join(dir, 'b.csv'), 'new');
    expect(fs.lstatSync(path.join(dir, 'b.csv')).isSymbolicLink()).toBe(true);
    expect(fs.lstatSync(path.join(dir, 'a.csv')).isSymbolicLink()).toBe(true);
    expect(fs.readFileSync(path.join(dir, 'real', 'a.csv'), 'utf8')).toBe('new');
    // A link to a file not there yet: the file is made where it points.
    fs.symlinkSync(path.join('real', 'later.csv'), path.join(dir, 'later.csv'));
    await writeAll(path.join(dir, 'later.csv'), 'made');
    expect(fs.lstatSync(path.join(dir, 'later.csv')).isSymbolicLink()).toBe(true);
    expect(fs.readFileSync(path.join(dir, 'real', 'later.csv'), 'utf8')).toBe('made');
    expect(fs.readdirSync(path.join(dir, 'real')).sort()).toEqual(['a.csv', 'later.csv']);
    // A loop of links is refused, naming why.
    fs.symlinkSync('loop2', path.join(dir, 'loop1'));
    fs.symlinkSync('loop1', path.join(dir, 'loop2'));
    await expect(openFileOutput(path.join(dir, 'loop1'))).rejects.toMatchObject({
      code: 'OUTPUT_UNWRITABLE',
      message: expect.stringContaining('ELOOP'),
    });
  });

  it('writes into a FIFO, which stays a FIFO, for the reader waiting on it', async () => {
    const dir = tempDir();
    const fifo = path.join(dir, 'out.jsonl');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    // The reader writes to a file: writes into a FIFO wait for it, this thread with them.
    const copy = path.join(dir, 'copy');
    const fd = fs.openSync(copy, 'w');
    const reader = spawn('cat', [fifo], { stdio: ['ignore', fd, 'inherit'] });
    fs.closeSync(fd);
    try {
      await writeAll(fifo, '{"a":1}\n'.repeat(50_000));
      const [code] = await once(reader, 'close');
      expect(code).toBe(0);
      expect(fs.readFileSync(copy, 'utf8')).toBe('{"a":1}\n'.repeat(50_000));
      expect(fs.lstatSync(fifo).isFIFO()).toBe(true);
      expect(fs.readdirSync(dir).sort()).toEqual(['copy', 'out.jsonl']);
    } finally {
      reader.kill();
    }
  });

  it('writes into a character device, which stays one', async () => {
    const dir = tempDir();
    // A device node of our own where allowed (root): a regression then replaces it, not /dev/null.
    const node = path.join(dir, 'null');
    const made = spawnSync('mknod', [node, 'c', '1', '3']).status === 0;
    const device = made ? node : '/dev/null';
    await writeAll(device, 'gone\n');
    expect(fs.lstatSync(device).isCharacterDevice()).toBe(true);
    if (made) {
      await writeAll('/dev/null', 'gone\n');
      expect(fs.lstatSync('/dev/null').isCharacterDevice()).toBe(true);
    }
    expect(fs.readdirSync(dir)).toEqual(made ? ['null'] : []);
  });

  it('connects to a socket and writes the rows to its listener', async () => {
    const dir = tempDir();
    const socketPath = path.join(dir, 'out.sock');
    const received: Buffer[] = [];
    const server = net.createServer((connection) => {
      connection.on('data', (d: Buffer) => received.push(d));
    });
    server.listen(socketPath);
    await once(server, 'listening');
    try {
      const ended = new Promise<void>((resolve) =>
        server.once('connection', (c) => c.once('end', resolve)),
      );
      await writeAll(socketPath, 'row\n'.repeat(100_000));
      await ended;
      expect(Buffer.concat(received).toString()).toBe('row\n'.repeat(100_000));
      expect(fs.lstatSync(socketPath).isSocket()).toBe(true);
    } finally {
      server.close();
    }
  });

  it('says why a folder that is there takes no file (/proc), rather than "does not exist"', async () => {
    await expect(openFileOutput('/proc/x.csv')).rejects.toMatchObject({
      code: 'OUTPUT_UNWRITABLE',
      exitCode: 2,
      message: 'cannot write /proc/x.csv: /proc does not take new files (ENOENT)',
    });
  });
});

describe('failed writes', () => {
  it('a full device (ENOSPC) is OUTPUT_FAILED, exit 3, naming the reason', async () => {
    const fd = fs.openSync('/dev/full', 'w');
    const output = descriptorOutput(fd, 'stdout', true);
    await output.write('x'.repeat(10));
    await expect(output.commit()).rejects.toMatchObject({
      code: 'OUTPUT_FAILED',
      exitCode: 3,
      message: 'cannot write to stdout: no space left on device (ENOSPC)',
    });
    await expect(writeAll('/dev/full', 'x')).rejects.toMatchObject({
      code: 'OUTPUT_FAILED',
      exitCode: 3,
      message: 'cannot write /dev/full: no space left on device (ENOSPC)',
    });
  });
});

describe('partial files of exports that no longer run', () => {
  it('are removed by the next export to the folder; those of live processes stay', async () => {
    const dir = tempDir();
    const dead = deadPid();
    const ofDead = path.basename(partialPath(path.join(dir, 'a.csv'), dead));
    const ofLive = path.basename(partialPath(path.join(dir, 'b.csv'), process.pid));
    // Another host's (its tag differs) or an earlier harvest's (no tag): judged by age alone.
    const foreignTag = hostTag() === '00000000' ? '11111111' : '00000000';
    const foreign = `.c.csv.${dead}-${foreignTag}0123abcd.partial`;
    const foreignOld = `.d.csv.${dead}-${foreignTag}0123abcd.partial`;
    const legacyOld = `.e.csv.${dead}-0123abcd.partial`;
    const unrelated = ['.notes.partial', `.f.csv.${dead}-xyz.partial`, 'g.csv'];
    for (const name of [ofDead, ofLive, foreign, foreignOld, legacyOld, ...unrelated]) {
      fs.writeFileSync(path.join(dir, name), 'rows');
    }
    const dayAgo = (Date.now() - UNJUDGED_PARTIAL_AGE_MS - 60_000) / 1000;
    for (const name of [foreignOld, legacyOld]) fs.utimesSync(path.join(dir, name), dayAgo, dayAgo);
    fs.mkdirSync(path.join(dir, `.h.csv.${dead}-${hostTag()}0123abcd.partial`));

    await writeAll(path.join(dir, 'out.csv'), 'new');
    expect(fs.readdirSync(dir).sort()).toEqual(
      [
        ofLive,
        foreign,
        ...unrelated,
        `.h.csv.${dead}-${hostTag()}0123abcd.partial`,
        'out.csv',
      ].sort(),
    );
    expect(removeStalePartials(path.join(dir, 'missing'))).toEqual([]);
  });
});
