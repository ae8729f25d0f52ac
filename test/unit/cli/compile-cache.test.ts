/**
 * bin/harvest.js keeps its compiled code on disk where Node can (22.1+, module.enableCompileCache),
 * in the temp folder when NODE_COMPILE_CACHE names no other; on Node 20, which has no such
 * cache, it starts as before. CI runs this file on 20, 22 and 24 (.ci/run).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import module from 'node:module';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../helpers/tmp.ts';

const BIN = path.resolve('bin/harvest.js');
const nodeHasCompileCache = 'enableCompileCache' in module;

describe('the compile cache of the binary', () => {
  const removers: Array<() => void> = [];
  afterEach(() => {
    for (const remove of removers.splice(0)) remove();
  });

  it(`is ${nodeHasCompileCache ? 'written to the temp folder' : 'absent'} on Node ${process.version}`, () => {
    const tmp = tempDir('compile-cache');
    removers.push(tmp.remove);
    // Only PATH and TMPDIR: no NODE_COMPILE_CACHE, which would turn the cache on by itself.
    const r = spawnSync(process.execPath, [BIN, 'validate', 'pipelines/demo.yaml'], {
      env: { PATH: process.env.PATH, TMPDIR: tmp.dir },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
    expect(r.stdout).toContain('1 file valid');
    const cache = path.join(tmp.dir, 'node-compile-cache');
    if (nodeHasCompileCache) expect(readdirSync(cache).length).toBeGreaterThan(0);
    else expect(existsSync(cache)).toBe(false);
  });
});
