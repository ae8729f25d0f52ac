/**
 * Malformed and hostile YAML: refused before a costly parse, reported where the problem opens,
 * in a list a person can read, and no key dropped without a word.
 */
import { describe, expect, it } from 'vitest';
import { MAX_ISSUES_PER_FILE, parsePipeline, plan } from '../../../src/pipeline/index.ts';
import { messages, valid, yaml } from './helpers.ts';

const TOO_DEEP =
  'the YAML nests too deeply to read here (a pipeline needs a few levels, at most 64): unclosed [ or { brackets, or an indentation slip?';

describe('nesting is bounded before the parse', () => {
  it('a megabyte of unclosed [ is one error, at the bracket that went too deep', () => {
    expect(messages('['.repeat(1_000_000))).toEqual([`p.yaml:1:128 (file): ${TOO_DEEP}`]);
  });

  it('so are lists nested on one line, explicit keys and ever deeper indentation', () => {
    expect(messages(`${'- '.repeat(500_000)}x\n`)).toEqual([`p.yaml:1:257 (file): ${TOO_DEEP}`]);
    expect(messages(`${'? '.repeat(500_000)}x\n`)).toEqual([`p.yaml:1:257 (file): ${TOO_DEEP}`]);
    const lines = Array.from({ length: 1400 }, (_, i) => `${' '.repeat(i)}k${i}:`);
    expect(messages(lines.join('\n'))).toEqual([`p.yaml:129:129 (file): ${TOO_DEEP}`]);
  });

  it('quotes, comments and block text do not count as nesting', () => {
    const text = yaml([
      'name: brackets',
      `description: "${'['.repeat(300)}"`,
      `# ${'{'.repeat(300)}`,
      'searches:',
      `  - query: '${'['.repeat(300)}'`,
      '    tags: [a, b]',
      '  - query: |',
      `      ${'[ '.repeat(200)}`,
    ]);
    expect(valid(text).stats.items).toBe(2);
  });
});

describe('an unclosed quote or bracket is reported where it opens', () => {
  it('a double quote', () => {
    const text = yaml(['name: a', 'searches:', '  - query: "abc', '    limit: 3']);
    expect(messages(text)).toEqual(['p.yaml:3:12 (file): Missing closing "quote']);
  });

  it("a single quote, after one that is closed and an escaped ''", () => {
    const text = yaml([
      'name: a',
      "description: 'it''s closed'",
      'searches:',
      "  - query: 'abc",
      '  - x',
    ]);
    expect(messages(text)).toEqual(["p.yaml:4:12 (file): Missing closing 'quote"]);
  });

  it('a quote inside a flow list, and the list', () => {
    expect(messages(yaml(['name: a', 'searches: ["x, y]', 'run: {concurrency: 2}']))).toEqual([
      'p.yaml:2:11 (file): Flow sequence in block collection must be sufficiently indented and end with a ]',
      'p.yaml:2:12 (file): Missing closing "quote',
    ]);
  });

  it('a flow mapping inside a flow list', () => {
    expect(messages(yaml(['name: a', 'searches: [{query: x', 'run: {concurrency: 2}']))).toEqual([
      'p.yaml:2:11 (file): Flow sequence in block collection must be sufficiently indented and end with a ]',
      'p.yaml:2:12 (file): Flow map in block collection must be sufficiently indented and end with a }',
    ]);
  });
});

describe('the issues of a file are capped', () => {
  it('1,000 aliases are the first few and how many more', () => {
    const lines = ['name: a', 'searches:'];
    for (let i = 0; i < 1000; i++) lines.push(`  - query: *x${i}`);
    const found = messages(yaml(lines));
    expect(found).toHaveLength(MAX_ISSUES_PER_FILE + 1);
    expect(found[0]).toBe(
      'p.yaml:3:12 (file): YAML aliases are not supported (*x0); use "defaults:" to share settings',
    );
    expect(found.at(-1)).toBe(`p.yaml:1:1 (file): … and ${1000 - MAX_ISSUES_PER_FILE} more issues`);
  });

  /**
   * `n` searches whose waits the hosted service refuses (two warnings each: waitFor, and the
   * waits in total), then one with an unknown key (an error).
   */
  const warned = (n: number, withError: boolean) => {
    const lines = ['name: a', 'searches:'];
    for (let i = 0; i < n; i++)
      lines.push(`  - query: q${i}`, '    scrapeOptions: {waitFor: 70000}');
    if (withError) lines.push('  - query: last', '    limt: 3');
    return yaml(lines);
  };

  it('errors are shown before warnings, and the count says whether errors are hidden', () => {
    const result = parsePipeline(warned(15, true), 'p.yaml');
    expect(result.ok).toBe(false);
    const issues = result.ok ? [] : result.issues;
    expect(issues).toHaveLength(MAX_ISSUES_PER_FILE + 1);
    expect(issues.filter((i) => i.code === 'UNKNOWN_KEY')).toHaveLength(1);
    expect(issues.at(-1)).toMatchObject({
      code: 'TOO_MANY_ISSUES',
      severity: 'warning',
      message: `… and ${31 - MAX_ISSUES_PER_FILE} more issues`,
    });
  });

  it('a file with only warnings beyond the cap stays valid', () => {
    const result = parsePipeline(warned(15, false), 'p.yaml');
    expect(result.ok).toBe(true);
    expect(result.ok && result.warnings.at(-1)?.message).toBe(
      `… and ${30 - MAX_ISSUES_PER_FILE} more issues`,
    );
  });
});

describe('__proto__ as a key', () => {
  it('is refused as a matrix key, at the key, rather than dropped', () => {
    const text = yaml([
      'name: a',
      'searches:',
      '  - query: "{topic} {__proto__}"',
      '    matrix:',
      '      topic: [a, b]',
      '      __proto__: [x, y]',
    ]);
    expect(messages(text)).toEqual([
      'p.yaml:6:7 searches[0].matrix.__proto__: the key "__proto__" is reserved in JavaScript and would be dropped without a word; name the placeholder otherwise',
    ]);
  });

  it('is refused among headers, which a record would drop too', () => {
    const text = yaml([
      'name: a',
      'searches:',
      '  - query: x',
      '    scrapeOptions: {headers: {"__proto__": x, accept: y}}',
    ]);
    expect(messages(text)).toEqual([
      'p.yaml:4:31 searches[0].scrapeOptions.headers.__proto__: the key "__proto__" is reserved in JavaScript and would be dropped without a word; rename it',
    ]);
  });

  it('constructor and prototype are kept like any other key', () => {
    const text = yaml([
      'name: a',
      'searches:',
      '  - query: "{prototype} {constructor}"',
      '    scrapeOptions: {headers: {constructor: x, prototype: y}}',
      '    matrix:',
      '      prototype: [a, b]',
      '      constructor: [c]',
    ]);
    const tasks = plan(valid(text).value).tasks;
    expect(tasks.map((t) => t.request.query)).toEqual(['a c', 'b c']);
    expect(tasks[0]?.request.scrapeOptions?.headers).toEqual({ constructor: 'x', prototype: 'y' });
  });
});
