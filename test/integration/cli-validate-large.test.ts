/**
 * `harvest validate` through the real binary on files that used to cost minutes and gigabytes:
 * a small file whose matrix expands to millions of searches, and a megabyte of unclosed
 * brackets. No Redis, no sandbox.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN } from '../helpers/cli.ts';
import { tempDir } from '../helpers/tmp.ts';

const tmp = tempDir('cli-validate-large');
afterAll(() => tmp.remove());

function harvest(args: string[]) {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH, LOG_LEVEL: 'silent', HARVEST_DATA_DIR: tmp.dir },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const list = (n: number, prefix: string) =>
  `[${Array.from({ length: n }, (_, i) => `${prefix}${i}`).join(', ')}]`;

describe('validate of large and malformed files', () => {
  it('a 2 KB file of 9,900,000 searches: counted, sampled, and the size a run writes', () => {
    const file = path.join(tmp.dir, 'millions.yaml');
    writeFileSync(
      file,
      [
        'name: millions',
        'searches:',
        '  - query: "{a} {b} {c} {d}"',
        '    matrix:',
        `      a: ${list(99, 'a')}`,
        `      b: ${list(100, 'b')}`,
        `      c: ${list(100, 'c')}`,
        `      d: ${list(10, 'd')}`,
        '',
      ].join('\n'),
    );
    const out = harvest(['validate', file]);
    expect(out.code).toBe(0);
    const lines = out.stdout.trim().split('\n');
    expect(lines[0]).toBe(`ok ${file} (1 search, at most 9900000 tasks)`);
    expect(lines[1]).toContain('9900000 searches, more than 100000: checked 100 of them');
    expect(lines[2]).toMatch(/^ {2}a run writes about \d\.\d GiB of task rows/);
    expect(lines[3]).toBe('1 file valid');
    // stderr is not a terminal here: no progress line.
    expect(out.stderr).toBe('');
  });

  it('a megabyte of unclosed [ is one line naming where it went too deep', () => {
    const file = path.join(tmp.dir, 'brackets.yaml');
    writeFileSync(file, '['.repeat(1_000_000));
    const out = harvest(['validate', file]);
    expect(out.code).toBe(1);
    expect(out.stdout.trim().split('\n')).toEqual([
      `${file}:1:128 (file): the YAML nests too deeply to read here (a pipeline needs a few levels, at most 64): unclosed [ or { brackets, or an indentation slip?`,
      '1 of 1 file invalid',
    ]);
  });
});
