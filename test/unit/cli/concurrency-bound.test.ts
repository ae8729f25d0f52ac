/**
 * `-c` beyond the bound of one process is refused as bad input (exit 2) before anything
 * starts: no Redis is asked (here none answers, which would be exit 3) and no database is made.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN } from '../../helpers/cli.ts';
import { tempDir } from '../../helpers/tmp.ts';

const tmp = tempDir('concurrency-bound');
afterAll(() => tmp.remove());

function harvest(args: string[]) {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    env: {
      PATH: process.env.PATH,
      LOG_LEVEL: 'silent',
      HARVEST_DATA_DIR: tmp.dir,
      HARVEST_API_KEY: 'fc-test',
      HARVEST_API_URL: 'http://127.0.0.1:9',
      // Nothing listens here: a command that got as far as Redis would exit 3.
      REDIS_URL: 'redis://127.0.0.1:9',
    },
    encoding: 'utf8',
    timeout: 15_000,
  });
  return { code: result.status, stderr: result.stderr };
}

describe('-c has a bound per process', () => {
  it('worker -c and run --local -c beyond 10,000 exit 2 before touching Redis or the database', () => {
    const file = path.join(tmp.dir, 'p.yaml');
    writeFileSync(file, 'name: bound\nsearches:\n  - query: x\n');
    for (const args of [
      ['worker', '-c', '10001'],
      ['run', file, '--local', '-c', '99999999'],
    ]) {
      const out = harvest(args);
      expect(out.stderr, args.join(' ')).toContain('expected a whole number from 1 to 10000');
      expect(out.code, args.join(' ')).toBe(2);
    }
    expect(existsSync(path.join(tmp.dir, 'harvest.db'))).toBe(false);
  });
});
