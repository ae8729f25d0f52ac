/**
 * Pipelines that expand to millions of searches: validation counts them without making them,
 * checks a sample, and says what a run would write; a person at a terminal sees how far it is.
 */
import { statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createValidateProgress,
  renderReports,
  VALIDATE_EACH_UP_TO,
  validateFiles,
} from '../../../src/cli/commands/validate.ts';
import {
  estimateTaskRowsBytes,
  formatIssue,
  parsePipeline,
  planTasks,
} from '../../../src/pipeline/index.ts';
import { openStore } from '../../../src/store/index.ts';
import { tempDir } from '../../helpers/tmp.ts';
import { valid, yaml } from './helpers.ts';

const tmp = tempDir('harvest-large');
afterAll(() => tmp.remove());

const list = (n: number, f: (i: number) => string) =>
  `[${Array.from({ length: n }, (_, i) => f(i)).join(', ')}]`;

/** About 1.6 KB of YAML: 99 x 100 x 100 x 10 = 9,900,000 searches. */
const MILLIONS = yaml([
  'name: millions',
  'searches:',
  '  - query: "{a} {b} {c} {d}"',
  '    matrix:',
  `      a: ${list(99, (i) => `a${i}`)}`,
  `      b: ${list(100, (i) => `b${i}`)}`,
  `      c: ${list(100, (i) => `c${i}`)}`,
  `      d: ${list(10, (i) => `d${i}`)}`,
]);

describe('a file whose matrix expands to millions of searches', () => {
  it('is counted by the product of its lists and checked by sample, not expanded', () => {
    const reports: Array<[number, number]> = [];
    const result = parsePipeline(MILLIONS, 'p.yaml', {
      checkEachUpTo: VALIDATE_EACH_UP_TO,
      onProgress: (checked, total) => reports.push([checked, total]),
    });
    if (!result.ok) throw new Error(result.issues.map(formatIssue).join('\n'));
    expect(result.stats).toEqual({ items: 1, expanded: 9_900_000, unique: 9_900_000 });
    // Each value of each key once (the longest list: 100), with the longest query among them.
    expect(result.check).toMatchObject({ everySearch: false, checked: 100 });
    expect(reports.at(-1)).toEqual([100, 100]);
  });

  it('validate says how it was checked and what a run would write', async () => {
    const file = join(tmp.dir, 'millions.yaml');
    await writeFile(file, MILLIONS);
    const [report] = await validateFiles([file]);
    expect(report).toMatchObject({ ok: true, check: { checked: 100, everySearch: false } });
    const perTask = report!.taskRowsBytes! / 9_900_000;
    expect(perTask).toBeGreaterThan(200);
    expect(perTask).toBeLessThan(500);
    const lines = renderReports([report!]).split('\n');
    expect(lines[0]).toBe(`ok ${file} (1 search, at most 9900000 tasks)`);
    expect(lines[1]).toBe(
      `  9900000 searches, more than ${VALIDATE_EACH_UP_TO}: checked 100 of them (each matrix value, pairs of request-field values, the longest query); duplicates not counted (\`harvest plan\` counts them)`,
    );
    expect(lines[2]).toMatch(
      /^ {2}a run writes about \d\.\d GiB of task rows to the database before its first search \(9900000 tasks × about \d+ B each, from the request JSON of the searches checked\)$/,
    );
  });

  it('a file within the bound is checked search by search, as before', () => {
    const text = yaml([
      'name: x',
      'searches:',
      '  - query: "{t}"',
      `    matrix: {t: ${list(50, (i) => `t${i % 40}`)}}`,
    ]);
    const result = valid(text);
    expect(result.check).toMatchObject({ everySearch: true, checked: 50 });
    expect(result.stats).toEqual({ items: 1, expanded: 50, unique: 40 });
    expect(result.warnings.map((w) => w.code)).toEqual(['DUPLICATE_SEARCH']);
  });
});

describe('the sample of a large file', () => {
  /**
   * Issues of a file checked search by search and by sample, without counts of repeats and
   * without duplicates (a sample does not look for them).
   */
  function bothWays(text: string) {
    const found = (checkEachUpTo: number) => {
      const result = parsePipeline(text, 'p.yaml', { checkEachUpTo });
      return (result.ok ? result.warnings : result.issues)
        .filter((issue) => issue.code !== 'DUPLICATE_SEARCH')
        .map(formatIssue)
        .map((line) => line.replace(/ \(and \d+ more combinations?\)/, ''));
    };
    return { each: found(Number.POSITIVE_INFINITY), sample: found(0) };
  }

  it.each([
    [
      'a bad value of a request field',
      ['  - query: "{t}"', '    matrix:', '      t: [a, b, c]', '      limit: [1, 2, 500, 3]'],
    ],
    [
      'includeDomains and excludeDomains set together by two keys',
      [
        '  - query: "{t}"',
        '    matrix:',
        '      t: [a, b, c]',
        '      includeDomains: [[], [a.com]]',
        '      excludeDomains: [[], [], [b.com]]',
      ],
    ],
    [
      'a query too long for one combination',
      [
        '  - query: "{t} {u}"',
        '    matrix:',
        `      t: [a, b, ${'x'.repeat(300)}]`,
        `      u: [c, ${'y'.repeat(250)}, d]`,
      ],
    ],
    [
      'a blank query',
      ['  - query: "{t} {u}"', '    matrix:', '      t: [a, " ", c]', '      u: [x, ""]'],
    ],
  ])('finds what checking each search finds: %s', (_what, lines) => {
    const { each, sample } = bothWays(yaml(['name: a', 'searches:', ...lines]));
    expect(each.length).toBeGreaterThan(0);
    expect(sample).toEqual(each);
  });

  it('finds the media each search asks for', () => {
    const { each, sample } = bothWays(
      yaml([
        'name: a',
        'media: {audio: true}',
        'searches:',
        '  - query: "{t}"',
        '    matrix:',
        '      t: [a, b]',
        '      scrapeOptions: [{formats: [markdown]}, {formats: [screenshot]}]',
      ]),
    );
    expect(sample).toEqual(each);
    expect(sample.join('\n')).toContain('screenshot');
  });
});

describe('the size of the task rows a run writes', () => {
  it('is within a fifth of what SQLite takes for them', () => {
    const text = yaml([
      'name: rows',
      'defaults: {scrapeOptions: {formats: [markdown, screenshot], onlyMainContent: true}}',
      'searches:',
      '  - id: local-news',
      '    tags: [news]',
      '    query: "{t} {u} news"',
      '    matrix:',
      `      t: ${list(100, (i) => `topic${i}`)}`,
      `      u: ${list(100, (i) => `u${i}`)}`,
    ]);
    const result = valid(text);
    const path = join(tmp.dir, 'rows.db');
    const store = openStore(path);
    const pipelineId = store.pipelines.upsert({ name: 'rows', hash: 'h', yamlText: text });
    const runId = '20261122T101500-a1b2';
    store.runs.create({ id: runId, pipelineId, trigger: 'manual', maxCredits: null, taskCount: 0 });
    store.close();
    const before = statSync(path).size;
    const again = openStore(path);
    again.tasks.insertMany(runId, planTasks(result.value));
    again.close();
    const written = statSync(path).size - before;
    const estimate = estimateTaskRowsBytes(result.stats.unique, result.check.taskTextChars);
    expect(estimate / written).toBeGreaterThan(0.8);
    expect(estimate / written).toBeLessThan(1.2);
  });
});

/** A terminal that keeps what is written to it. */
function terminal(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let written = '';
  stream.on('data', (chunk: Buffer) => {
    written += chunk.toString();
  });
  return { stream, text: () => written };
}

describe('progress of validate on a terminal', () => {
  const file = join(tmp.dir, 'forty-thousand.yaml');
  const text = yaml([
    'name: forty',
    'searches:',
    '  - query: "{t} {u}"',
    `    matrix: {t: ${list(200, (i) => `t${i}`)}, u: ${list(200, (i) => `u${i}`)}}`,
  ]);

  it('shows how many searches are checked once a file takes longer than a second', async () => {
    await writeFile(file, text);
    const { stream, text: shown } = terminal();
    let nowMs = 0;
    const clock = () => {
      nowMs += 400;
      return nowMs;
    };
    const [report] = await validateFiles([file], {
      progress: createValidateProgress(stream, clock),
    });
    expect(report?.ok).toBe(true);
    expect(shown()).toContain(
      `\r\u001b[Kvalidating ${file}: 24576 of 40000 searches checked (61%)`,
    );
    // Erased when the file is done, so the report starts on a clean line.
    expect(shown().endsWith('\r\u001b[K')).toBe(true);
  });

  it('shows nothing for a file checked within a second', async () => {
    await writeFile(file, text);
    const { stream, text: shown } = terminal();
    await validateFiles([file], { progress: createValidateProgress(stream, () => 0) });
    expect(shown()).toBe('');
  });
});
