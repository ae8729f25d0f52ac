import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  contentPath,
  hashFile,
  mediaRoot,
  openPartialFile,
  PARTIAL_DIR,
  partialOwner,
  placeFile,
  removeOrphanPartials,
  writeAll,
} from '../../../src/media/storage.ts';
import { useCleanup } from '../../helpers/cleanup.ts';
import { tempDir } from '../../helpers/tmp.ts';

const defer = useCleanup();

function dataDir(): string {
  const tmp = tempDir('harvest-media');
  defer(() => tmp.remove());
  return tmp.dir;
}

async function partialWith(root: string, bytes: Buffer, owner = 'host-1-abc'): Promise<string> {
  const file = await openPartialFile(root, owner);
  fs.writeSync(file.fd, bytes);
  fs.closeSync(file.fd);
  return file.path;
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('media storage', () => {
  it('moves a complete file to its content address, once per content', async () => {
    const data = dataDir();
    const root = mediaRoot(data, 'media');
    const bytes = Buffer.from('hello media');
    const first = await placeFile({
      dataDir: data,
      root,
      partial: await partialWith(root, bytes),
      sha256: sha(bytes),
      ext: 'png',
      bytes: bytes.length,
    });
    expect(first).toEqual({
      relPath: `media/${sha(bytes).slice(0, 2)}/${sha(bytes)}.png`,
      existed: false,
    });
    expect(fs.readFileSync(path.join(data, first.relPath))).toEqual(bytes);

    const again = await partialWith(root, bytes);
    const second = await placeFile({
      dataDir: data,
      root,
      partial: again,
      sha256: sha(bytes),
      ext: 'png',
      bytes: bytes.length,
    });
    expect(second).toEqual({ relPath: first.relPath, existed: true });
    expect(fs.existsSync(again)).toBe(false);
    expect(fs.readdirSync(path.join(root, PARTIAL_DIR))).toEqual([]);
    expect(await hashFile(path.join(data, first.relPath))).toEqual({
      sha256: sha(bytes),
      bytes: bytes.length,
    });
  });

  it('replaces a damaged file at the address with the right bytes, of another size or the same', async () => {
    const data = dataDir();
    const root = mediaRoot(data, 'media');
    const bytes = Buffer.from('the real bytes');
    const target = path.join(root, contentPath(sha(bytes), 'mp3'));
    fs.mkdirSync(path.dirname(target), { recursive: true });
    const flipped = Buffer.from(bytes);
    flipped[3]! ^= 0xff;
    for (const damaged of [Buffer.from('torn'), flipped]) {
      fs.writeFileSync(target, damaged);
      const placed = await placeFile({
        dataDir: data,
        root,
        partial: await partialWith(root, bytes),
        sha256: sha(bytes),
        ext: 'mp3',
        bytes: bytes.length,
      });
      expect(placed.existed).toBe(damaged.length === bytes.length);
      expect(fs.readFileSync(target)).toEqual(bytes);
    }
  });

  it('opens partial files in a folder made once, and made again when it was removed', async () => {
    const data = dataDir();
    const root = mediaRoot(data, 'media');
    const first = await partialWith(root, Buffer.from('one'));
    fs.rmSync(path.join(root, PARTIAL_DIR), { recursive: true });
    const second = await partialWith(root, Buffer.from('two'));
    expect(path.dirname(second)).toBe(path.join(root, PARTIAL_DIR));
    expect(fs.existsSync(first)).toBe(false);
    expect(fs.readFileSync(second, 'utf8')).toBe('two');
  });

  it('writes every chunk in order with one call, more chunks than a system call takes included', async () => {
    const root = mediaRoot(dataDir(), 'media');
    // IOV_MAX is 1024 on Linux: 3000 chunks take the system several writes.
    const chunks = Array.from({ length: 3000 }, (_, i) => Buffer.from(`${i},`));
    chunks.splice(10, 0, Buffer.alloc(0));
    const file = await openPartialFile(root, 'host-1-abc');
    await writeAll(file.fd, chunks);
    fs.closeSync(file.fd);
    expect(fs.readFileSync(file.path).equals(Buffer.concat(chunks))).toBe(true);
  });

  it('removes partial files of dead workers and stale ones, not those of live downloads', async () => {
    const data = dataDir();
    const root = mediaRoot(data, 'media');
    const dead = await partialWith(root, Buffer.from('half'), 'host-2-dead');
    const old = await partialWith(root, Buffer.from('half'), 'host-1-live');
    const live = await partialWith(root, Buffer.from('growing'), 'host-1-live');
    const strange = path.join(root, '.partial', 'no-owner.part');
    fs.writeFileSync(strange, 'x');
    expect(partialOwner(path.basename(live))).toBe('host-1-live');
    expect(partialOwner('a--b.tmp')).toBeUndefined();
    const now = Date.now();
    fs.utimesSync(old, new Date(now - 3_600_000), new Date(now - 3_600_000));
    const alive = async (owner: string) => owner === 'host-1-live';
    expect(await removeOrphanPartials(root, alive, 600_000, now)).toBe(3);
    expect(fs.readdirSync(path.join(root, '.partial'))).toEqual([path.basename(live)]);
    expect(fs.existsSync(dead)).toBe(false);
    expect(await removeOrphanPartials(path.join(data, 'nothing-here'), alive, 0, now)).toBe(0);
  });

  it('keeps media inside the data directory', () => {
    const data = dataDir();
    expect(mediaRoot(data, 'media/capture')).toBe(path.join(data, 'media', 'capture'));
    for (const bad of ['../elsewhere', '/etc', 'media/../../x', '.', '']) {
      expect(() => mediaRoot(data, bad), bad).toThrow(
        /media.dir must be a folder inside the data directory/,
      );
    }
    expect(() => contentPath('../../etc/passwd', 'png')).toThrow();
    expect(() => contentPath('a'.repeat(64), 'p/ng')).toThrow();
  });
});
