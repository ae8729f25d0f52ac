import { describe, expect, it } from 'vitest';
import { budgetVerdict, canonicalJson, plan, taskKey } from '../../../src/pipeline/index.ts';
import { valid, yaml } from './helpers.ts';

describe('canonical keys', () => {
  it('sorts keys at every level and drops undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: undefined } })).toBe(
      '{"a":{"d":[2,{"y":2,"z":1}]},"b":1}',
    );
  });

  it('is stable under key reordering, and is 16 hex characters', () => {
    const one = taskKey({
      query: 'a',
      limit: 5,
      scrapeOptions: { formats: ['markdown'], timeout: 1000 },
    });
    const two = taskKey({
      scrapeOptions: { timeout: 1000, formats: ['markdown'] },
      limit: 5,
      query: 'a',
    });
    expect(one).toBe(two);
    expect(one).toMatch(/^[0-9a-f]{16}$/);
    // Pinned (sha256 of {"query":"hello"}): the same request has the same key on any machine and in any later version.
    expect(taskKey({ query: 'hello' })).toBe('96780c036a8123d5');
  });

  it('gives the same tasks for files that differ only in key order', () => {
    const a = yaml([
      'name: x',
      'searches:',
      '  - query: q',
      '    limit: 3',
      '    scrapeOptions: {formats: [markdown], timeout: 9000}',
    ]);
    const b = yaml([
      'searches:',
      '  - scrapeOptions: {timeout: 9000, formats: [markdown]}',
      '    limit: 3',
      '    query: q',
      'name: x',
    ]);
    expect(plan(valid(a).value).tasks.map((t) => t.key)).toEqual(
      plan(valid(b).value).tasks.map((t) => t.key),
    );
  });

  it('keys normalised requests: explicit defaults give the same key', () => {
    const text = yaml([
      'name: x',
      'searches:',
      '  - query: q',
      '  - {query: q, limit: 10, country: US, sources: [{type: web}]}',
    ]);
    expect(plan(valid(text).value).tasks).toHaveLength(1);
  });
});

describe('plan', () => {
  it('is deterministic and applies the contract defaults', () => {
    const text = yaml(['name: x', 'searches:', '  - {id: s, query: q, tags: [a]}']);
    const pipeline = valid(text).value;
    const first = plan(pipeline);
    expect(plan(pipeline)).toEqual(first);
    expect(first.tasks[0]).toMatchObject({
      searchId: 's',
      tags: ['a'],
      request: { query: 'q', limit: 10, sources: [{ type: 'web' }], country: 'US', timeout: 60000 },
      credits: { min: 0, max: 2 },
    });
  });

  it('estimates credits per task and in total, and compares with the budget', () => {
    const text = yaml([
      'name: x',
      'searches:',
      '  - {query: a, limit: 10}',
      '  - {query: b, limit: 20, scrapeOptions: {formats: [markdown]}}',
      'budget: {maxCredits: 30}',
    ]);
    const { estimate, tasks } = plan(valid(text).value);
    expect(tasks.map((t) => t.credits)).toEqual([
      { min: 0, max: 2 },
      { min: 0, max: 24 },
    ]);
    expect(estimate).toEqual({
      tasks: 2,
      minCredits: 0,
      maxCredits: 26,
      budgetCredits: 30,
      verdict: 'within',
    });
  });

  it('verdicts', () => {
    expect(budgetVerdict(0, 10, 10)).toBe('within');
    expect(budgetVerdict(0, 11, 10)).toBe('may-exceed');
    expect(budgetVerdict(11, 20, 10)).toBe('exceeds');
    expect(budgetVerdict(0, 20, undefined)).toBe('no-budget');
  });

  it('does not let tasks share mutable state', () => {
    const text = yaml([
      'name: x',
      'defaults: {scrapeOptions: {formats: [markdown]}}',
      'searches:',
      '  - query: "{t}"',
      '    matrix: {t: [a, b]}',
    ]);
    const [a] = plan(valid(text).value).tasks;
    expect(Object.isFrozen(a?.request.scrapeOptions)).toBe(true);
  });
});
