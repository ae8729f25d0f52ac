/** Stored files no saved row points at (orphans) are found; nothing else is taken for one. */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findOrphans } from '../../../src/media/verify.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function put(dataDir: string, rel: string, text: string): string {
  fs.mkdirSync(path.dirname(path.join(dataDir, rel)), { recursive: true });
  fs.writeFileSync(path.join(dataDir, rel), text);
  return rel;
}

const stored = (root: string, text: string, ext = 'png') => {
  const sha = createHash('sha256').update(text).digest('hex');
  return `${root}/${sha.slice(0, 2)}/${sha}.${ext}`;
};

describe('findOrphans', () => {
  it('lists stored files of every media folder that no saved row points at', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'harvest-orphans-'));
    dirs.push(dataDir);
    const kept = put(dataDir, stored('media', 'kept'), 'kept');
    const lost = put(dataDir, stored('media', 'lost'), 'lost!');
    const elsewhere = put(dataDir, stored('shots/2026', 'other', 'webm'), 'other');
    // Not stored files: a partial download, a file of another name, one in the wrong shard.
    put(dataDir, 'media/.partial/w1~abc.part', 'partial');
    put(dataDir, 'media/ab/notes.txt', 'notes');
    const sha = createHash('sha256').update('moved').digest('hex');
    put(dataDir, `media/${sha[0] === 'f' ? '00' : 'ff'}/${sha}.png`, 'moved');

    const roots = ['media', 'shots/2026', 'media', 'never-made'].map((d) => path.join(dataDir, d));
    const orphans = await findOrphans(dataDir, roots, new Set([kept]));
    expect(orphans).toEqual({
      files: 2,
      bytes: 10,
      paths: [
        { path: lost, bytes: 5 },
        { path: elsewhere, bytes: 5 },
      ].sort((a, b) => a.path.localeCompare(b.path)),
    });
  });
});
