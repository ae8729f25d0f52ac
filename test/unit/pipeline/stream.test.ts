import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type SearchRequest, withSearchDefaults } from '../../../src/contract/index.ts';
import { matrixVarsAt } from '../../../src/pipeline/expand.ts';
import {
  expandSearches,
  loadPipelineFile,
  type Pipeline,
  plan,
  planTasks,
  taskKey,
} from '../../../src/pipeline/index.ts';
import { messages, valid, yaml } from './helpers.ts';

const DIR = join(import.meta.dirname, '../../../pipelines');
const examples = (await readdir(DIR)).filter((name) => name.endsWith('.yaml')).sort();

const list = (n: number, f: (i: number) => string) =>
  `[${Array.from({ length: n }, (_, i) => f(i)).join(', ')}]`;

/** The plan by definition: every expanded search, the contract's defaults, first key wins. */
function referenceKeys(pipeline: Pipeline): { keys: string[]; duplicates: number } {
  const keys: string[] = [];
  const seen = new Set<string>();
  let duplicates = 0;
  pipeline.searches.forEach((item, index) => {
    const defaults = pipeline.defaults as Record<string, unknown> | undefined;
    for (const search of expandSearches(defaults, item as Record<string, unknown>, index)) {
      const key = taskKey(withSearchDefaults(search.request as SearchRequest));
      if (seen.has(key)) duplicates += 1;
      else {
        seen.add(key);
        keys.push(key);
      }
    }
  });
  return { keys, duplicates };
}

/** 60 topics x 25 countries x 20 limits, and an item that repeats part of it. */
const LARGE = yaml([
  'name: large',
  'defaults: {scrapeOptions: {formats: [markdown]}}',
  'searches:',
  '  - query: "{topic} news"',
  '    matrix:',
  `      topic: ${list(60, (i) => `t${i}`)}`,
  `      country: ${list(25, (i) => `C${i}`)}`,
  `      limit: ${list(20, (i) => String(i + 1))}`,
  '  - query: "{topic} news"',
  '    tags: [again]',
  '    matrix: {topic: [t0, extra], country: [C0], limit: [1, 2]}',
  'budget: {maxCredits: 1000}',
]);

let large: { result: ReturnType<typeof valid>; planned: ReturnType<typeof plan> } | undefined;
const largePlan = () => {
  if (large === undefined) {
    const result = valid(LARGE);
    large = { result, planned: plan(result.value) };
  }
  return large;
};

describe('planTasks', () => {
  it.each(examples)('yields the tasks of plan() for %s', async (name) => {
    const result = await loadPipelineFile(join(DIR, name));
    if (!result.ok) throw new Error(`${name} is invalid`);
    const planned = plan(result.value);
    const stream = planTasks(result.value);
    expect([...stream]).toEqual(planned.tasks);
    expect(stream.taskCount).toBe(planned.tasks.length);
    expect(stream.duplicates).toBe(planned.duplicates);
    expect(stream.estimate()).toEqual(planned.estimate);
    expect(planned.tasks.map((t) => t.key)).toEqual(referenceKeys(result.value).keys);
  });

  it('yields the tasks of plan() for a large matrix, as the contract normalises each search', () => {
    const { result, planned } = largePlan();
    const reference = referenceKeys(result.value);
    expect(planned.tasks).toHaveLength(30_002);
    expect(planned.tasks.map((t) => t.key)).toEqual(reference.keys);
    expect(planned.duplicates).toBe(reference.duplicates);
    expect(planned.duplicates).toBe(2);
    expect(result.stats).toEqual({ items: 2, expanded: 30_004, unique: 30_002 });

    const streamed = [...planTasks(result.value)];
    expect(streamed.map((t) => t.key)).toEqual(reference.keys);
    for (let i = 0; i < streamed.length; i += 997) expect(streamed[i]).toEqual(planned.tasks[i]);
    expect(streamed.at(-1)).toEqual(planned.tasks.at(-1));
    const last = planned.tasks.at(-1)!;
    expect('searchId' in last).toBe(false);
    expect(last).toMatchObject({
      tags: ['again'],
      vars: { topic: 'extra', country: 'C0', limit: 2 },
      request: { query: 'extra news', country: 'C0', limit: 2 },
    });
    expect(withSearchDefaults(last.request)).toEqual(last.request);
  });

  it('counts as it goes and has the plan totals once read to the end', () => {
    const { result, planned } = largePlan();
    const stream = planTasks(result.value);
    expect(stream.pipeline).toBe('large');
    expect(stream.taskCount).toBe(0);
    expect(stream.estimate()).toEqual({
      tasks: 0,
      minCredits: 0,
      maxCredits: 0,
      budgetCredits: 1000,
      verdict: 'within',
    });
    const iterator = stream[Symbol.iterator]();
    for (let i = 0; i < 100; i++) iterator.next();
    expect(stream.taskCount).toBe(100);
    expect(stream.done).toBe(false);
    expect(stream.estimate().maxCredits).toBe(
      planned.tasks.slice(0, 100).reduce((sum, t) => sum + t.credits.max, 0),
    );
    while (!iterator.next().done);
    expect(stream.done).toBe(true);
    expect(stream.taskCount).toBe(planned.tasks.length);
    expect(stream.duplicates).toBe(planned.duplicates);
    expect(stream.estimate()).toEqual(planned.estimate);
    expect(planned.estimate.verdict).toBe('may-exceed');
  });

  it('is read once', () => {
    const stream = planTasks(valid(yaml(['name: x', 'searches:', '  - query: q'])).value);
    expect([...stream]).toHaveLength(1);
    expect(() => [...stream]).toThrow('a task stream is read once');
  });
});

describe('expansion', () => {
  it('matrixVarsAt gives the matrix values of each search by its position', () => {
    const item = {
      query: '{a} {b}',
      matrix: { a: [1, 2, 3], country: ['DE', 'FR'], b: ['x', { y: 1 }] },
    };
    const searches = [...expandSearches(undefined, item, 0)];
    expect(searches).toHaveLength(12);
    searches.forEach((search, offset) => {
      expect(matrixVarsAt(item, offset)).toEqual(search.vars);
    });
    expect(matrixVarsAt({ query: 'q' }, 0)).toBeUndefined();
  });

  it('gives each search a request of its own', () => {
    const item = { query: '{t}', limit: 5, matrix: { t: ['a', 'b'], country: ['DE'] } };
    const [a, b] = [...expandSearches({ country: 'US' }, item, 0)];
    expect(a!.request).toEqual({ country: 'DE', query: 'a', limit: 5 });
    expect(b!.request).toEqual({ country: 'DE', query: 'b', limit: 5 });
    expect(a!.request).not.toBe(b!.request);
  });
});

describe('validation of large matrices', () => {
  // The query is the only thing that differs within a combination of field values; with the
  // placeholder key outermost, more combinations go by than are kept validated.
  const combinations = (extraLimit: string) =>
    yaml([
      'name: x',
      'searches:',
      '  - query: "{t}"',
      '    matrix:',
      '      t: [a, b, c]',
      `      country: ${list(90, (i) => `C${i}`)}`,
      `      limit: ${list(50, (i) => String(i + 1))}${extraLimit}`,
    ]);

  it('checks each combination of field values once, however many searches share it', () => {
    const result = valid(combinations(''));
    expect(result.warnings).toEqual([]);
    expect(result.stats).toEqual({ items: 1, expanded: 13_500, unique: 13_500 });
    expect(plan(result.value).tasks.map((t) => t.key)).toEqual(referenceKeys(result.value).keys);
  });

  it('reports a combination that breaks a cross-field rule once, counting the others', () => {
    const text = combinations('\n      scrapeOptions: [{timeout: 10000}, {timeout: 4000}]').replace(
      'name: x\n',
      'name: x\ndefaults: {scrapeOptions: {waitFor: 3000}}\n',
    );
    expect(messages(text)).toEqual([
      'p.yaml:2:37 defaults.scrapeOptions.waitFor: waitFor must not exceed half of timeout (with t=a, country=C0, limit=1, scrapeOptions={"timeout":4000}) (and 4499 more combinations) (received 3000 ms with timeout 4000 ms; allowed at most 2000 ms)',
    ]);
  });

  it('names the first search of a duplicate found in an earlier item', () => {
    const text = yaml([
      'name: x',
      'searches:',
      '  - query: "{t}"',
      '    matrix: {t: [a, b]}',
      '  - query: plain',
      '  - query: "{u}"',
      '    matrix: {u: [x, b, plain]}',
    ]);
    expect(valid(text).warnings.map((w) => `${w.path} ${w.message}`)).toEqual([
      'searches[2] expands to a search that is the same request as searches[0] (u=b repeats t=b); planned once',
      'searches[2] expands to a search that is the same request as searches[1] (u=plain); planned once',
    ]);
  });
});
