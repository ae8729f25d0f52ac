/**
 * `harvest validate` through the real binary on files a new user may hand it: what it cannot
 * read, and YAML that only looks like a pipeline. No Redis, no sandbox.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN } from '../helpers/cli.ts';
import { tempDir } from '../helpers/tmp.ts';

const tmp = tempDir('cli-validate-files');
chmodSync(tmp.dir, 0o755);
afterAll(() => tmp.remove());

/**
 * Runs the binary; `withoutDacCaps` drops root's power to read and list anything (setpriv), so
 * a mode-000 folder refuses it as it refuses other users, while the checkout (root's own, in a
 * folder others may not enter, in CI) stays readable.
 */
function harvest(args: string[], withoutDacCaps = false) {
  const command = [process.execPath, BIN, ...args];
  const caps = '-dac_override,-dac_read_search';
  const [file, ...rest] = withoutDacCaps
    ? ['setpriv', `--inh-caps=${caps}`, `--bounding-set=${caps}`, ...command]
    : command;
  const result = spawnSync(file as string, rest, {
    env: { PATH: process.env.PATH, LOG_LEVEL: 'silent', HARVEST_DATA_DIR: tmp.dir },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const canDropCaps = process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0;

describe('validate on what it cannot read', () => {
  // Root may list any directory: the binary runs without the capabilities that allow it.
  it.skipIf(!canDropCaps)(
    'a directory the user may not list is bad input: one line naming it and the error, exit 2',
    () => {
      const locked = path.join(tmp.dir, 'locked');
      mkdirSync(locked);
      writeFileSync(path.join(locked, 'p.yaml'), 'name: a\nsearches:\n  - query: x\n');
      chmodSync(locked, 0o000);
      const out = harvest(['validate', locked], true);
      expect(out.stderr).not.toContain('unexpected error');
      expect(out.stderr).not.toMatch(/\n\s+at /);
      expect(out.stderr.trim()).toBe(`harvest: cannot list directory ${locked} (EACCES)`);
      expect(out.code).toBe(2);
    },
  );
});

describe('a key written as a YAML collection', () => {
  it('`{topic}:` as a matrix key prints no Node warning and names the key as the problem', () => {
    const file = path.join(tmp.dir, 'brace-key.yaml');
    writeFileSync(
      file,
      'name: a\nsearches:\n  - query: "{topic} news"\n    matrix:\n      {topic}: [energy, housing]\n',
    );
    const out = harvest(['validate', file]);
    expect(out.code).toBe(1);
    // The yaml package's warning is for programmers ("Set mapAsMap: true").
    expect(out.stderr).not.toContain('Keys with collection values');
    expect(out.stderr).not.toContain('mapAsMap');
    expect(out.stdout).not.toContain('{{ topic }}');
    expect(out.stdout).toContain(
      `${file}:5:7 searches[0].matrix["{topic}"]: a key must be plain text, not a YAML mapping: write "topic:"`,
    );
  });
});
