import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planFile, renderPlan } from '../../../src/cli/commands/plan.ts';
import { renderReports, validateFiles } from '../../../src/cli/commands/validate.ts';
import { HarvestError, UsageError } from '../../../src/errors.ts';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../../..');
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'harvest-cli-'));
  await writeFile(join(dir, 'good.yaml'), 'name: good\nsearches:\n  - query: a\n  - query: a\n');
  await writeFile(join(dir, 'bad.yaml'), 'name: bad\nsearches:\n  - query: a\n    limt: 3\n');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('harvest validate', () => {
  it('reports each file, with warnings and errors as file:line:col', async () => {
    const reports = await validateFiles([dir]);
    expect(renderReports(reports).replaceAll(dir, 'DIR')).toMatchInlineSnapshot(`
      "DIR/bad.yaml:4:5 searches[0].limt: unknown key "limt"; did you mean "limit"? (received "limt"; allowed "id", "tags", "matrix", "query", "limit", "sources", "categories", "includeDomains", "excludeDomains", "tbs", "location", "country", "safe", "timeout", "ignoreInvalidURLs", "highlights", "enterprise", "scrapeOptions" or "threatProtection")
      DIR/good.yaml:4:5 searches[1]: warning: expands to a search that is the same request as searches[0]; planned once
      ok DIR/good.yaml (2 searches, 1 task)
      1 of 2 files invalid"
    `);
  });

  it('refuses a path that does not exist', async () => {
    await expect(validateFiles([join(dir, 'nope.yaml')])).rejects.toBeInstanceOf(UsageError);
  });

  it('exits 1 when a file is invalid and 0 when all are valid; --json for machines', async () => {
    const bad = await run('node', ['bin/harvest.js', 'validate', join(dir, 'bad.yaml')], {
      cwd: ROOT,
    }).catch((e) => e);
    expect(bad.code).toBe(1);
    const good = await run(
      'node',
      ['bin/harvest.js', 'validate', '--json', join(dir, 'good.yaml')],
      { cwd: ROOT },
    );
    expect(JSON.parse(good.stdout)).toMatchObject({
      ok: true,
      files: [{ ok: true, stats: { unique: 1 } }],
    });
  });
});

describe('harvest plan', () => {
  it('lists tasks, the estimate and the verdict', async () => {
    const report = await planFile(join(ROOT, 'pipelines/demo.yaml'), 2);
    expect(report.tasks).toHaveLength(2);
    const text = renderPlan(report);
    expect(text.split('\n')[0]).toBe('demo: 4 tasks');
    expect(text).toContain('… 2 more');
    expect(text).toMatch(/credits: 0\.\.\d+\nbudget: 50 credits, within budget$/);
  });

  it('tells tasks of one query apart by the fields they do not leave at the default', async () => {
    const file = join(dir, 'same-query.yaml');
    await writeFile(
      file,
      [
        'name: same',
        'searches:',
        '  - query: same query',
        '  - query: same query',
        '    sources: [news, images]',
        '  - query: same query',
        '    location: "New York"',
        '    tbs: qdr:d',
        '    categories: [{ type: github }]',
        '',
      ].join('\n'),
    );
    const lines = renderPlan(await planFile(file, 20))
      .split('\n')
      .slice(1, 4)
      .map((line) => line.replace(/^ {2}[0-9a-f]{16} {2}-\s+/, '').replace(/ {2}credits.*$/, ''));
    expect(lines).toEqual([
      '"same query" limit=10',
      '"same query" limit=10 sources=news,images',
      '"same query" limit=10 tbs=qdr:d location="New York" categories=github',
    ]);
  });

  it('throws PIPELINE_INVALID with every issue', async () => {
    const error = await planFile(join(dir, 'bad.yaml'), 20).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HarvestError);
    expect((error as HarvestError).code).toBe('PIPELINE_INVALID');
    expect((error as HarvestError).message).toContain('bad.yaml:4:5 searches[0].limt: unknown key');
  });
});
