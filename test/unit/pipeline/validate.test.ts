import { describe, expect, it } from 'vitest';
import { plan } from '../../../src/pipeline/index.ts';
import { messages, valid, yaml } from './helpers.ts';

describe('schema messages', () => {
  it('reports every problem of a file at once, with exact positions', () => {
    const text = yaml([
      'name: Bad Name', // 1
      'descripton: x', // 2
      'searches:', // 3
      '  - query: hello', // 4
      '    limt: 3', // 5
      '    scrapeOptions:', // 6
      '      formats: [markdwn, {type: screenshot, quality: 0}, {type: nope}]', // 7
      '  - query: "x"', // 8
      '    limit: "10"', // 9
    ]);
    expect(messages(text)).toMatchInlineSnapshot(`
      [
        "p.yaml:1:7 name: name must be a slug: lowercase letters and digits, words joined by single hyphens (received "Bad Name")",
        "p.yaml:2:1 descripton: unknown key "descripton"; did you mean "description"? (received "descripton"; allowed "name", "description", "defaults", "searches", "budget", "schedule", "media", "run" or "retention")",
        "p.yaml:5:5 searches[0].limt: unknown key "limt"; did you mean "limit"? (received "limt"; allowed "id", "tags", "matrix", "query", "limit", "sources", "categories", "includeDomains", "excludeDomains", "tbs", "location", "country", "safe", "timeout", "ignoreInvalidURLs", "highlights", "enterprise", "scrapeOptions" or "threatProtection")",
        "p.yaml:7:17 searches[0].scrapeOptions.formats[0]: not an allowed value; did you mean "markdown"? (received "markdwn"; allowed "markdown", "summary", "html", "rawHtml", "links", "images", "branding", "product", "menu", "screenshot", "json", "changeTracking", "audio" or "video")",
        "p.yaml:7:54 searches[0].scrapeOptions.formats[1].quality: too small (received 0; allowed at least 1)",
        "p.yaml:7:65 searches[0].scrapeOptions.formats[2].type: unknown type (received "nope"; allowed "markdown", "summary", "html", "rawHtml", "links", "images", "branding", "product", "menu", "audio", "video", "screenshot", "json", "changeTracking", "question" or "highlights")",
        "p.yaml:9:12 searches[1].limit: expected a number (received "10" (a string))",
      ]
    `);
  });

  it('reports a missing field at its parent and an empty list', () => {
    expect(messages(yaml(['description: no name', 'searches: []']))).toMatchInlineSnapshot(`
      [
        "p.yaml:1:1 name: required field is missing (allowed a string (text))",
        "p.yaml:2:11 searches: must not be empty (received 0 items; allowed at least 1 item)",
      ]
    `);
  });

  it('reports a wrong top-level type', () => {
    expect(messages('- a\n- b\n')).toMatchInlineSnapshot(`
      [
        "p.yaml:1:1 (file): expected an object (received ["a","b"] (a list))",
      ]
    `);
  });

  it('reports too long queries (the reference bound, 500)', () => {
    expect(
      messages(yaml(['name: q', 'searches:', `  - query: ${'a'.repeat(501)}`])),
    ).toMatchInlineSnapshot(`
      [
        "p.yaml:3:12 searches[0].query: too long (received 501 characters; allowed at most 500 characters)",
      ]
    `);
  });

  it('a number beyond the safe integers is one problem, with the bound of the field', () => {
    const text = yaml(['name: a', 'searches:', '  - query: x', '    limit: 99999999999999999999']);
    // zod reports two bounds (the safe integers' and the API's): neither is a matrix combination.
    expect(messages(text)).toEqual([
      'p.yaml:4:12 searches[0].limit: too large (received 100000000000000000000; allowed at most 100)',
    ]);
  });

  it('checks the queries a template makes, not the template: long placeholder names are fine', () => {
    const name = 'topic_of_the_search_in_long_words_for_readability';
    const template = `${'a'.repeat(460)} {${name}}`;
    expect(template.length).toBeGreaterThan(500);
    const text = yaml([
      'name: q',
      'searches:',
      `  - query: "${template}"`,
      `    matrix: {${name}: [ai, ml]}`,
    ]);
    expect(messages(text)).toEqual([]);
    const long = yaml([
      'name: q',
      'searches:',
      `  - query: "${template}"`,
      `    matrix: {${name}: [${'x'.repeat(60)}]}`,
    ]);
    expect(messages(long)).toEqual([
      `p.yaml:3:12 searches[0].query: too long (with ${name}=${'x'.repeat(60)}) (received 521 characters; allowed at most 500 characters)`,
    ]);
  });

  it('checks budget, run and media fields', () => {
    const text = yaml([
      'name: x',
      'searches: [{query: a}]',
      'budget: {maxCredits: 0}',
      'run: {concurrency: 2, rateLimitPerMinute: 20000, retries: 3}',
      'media: {screenshot: yes}',
    ]);
    expect(messages(text)).toMatchInlineSnapshot(`
      [
        "p.yaml:3:22 budget.maxCredits: too small (received 0; allowed more than 0)",
        "p.yaml:4:43 run.rateLimitPerMinute: too large (received 20000; allowed at most 10000)",
        "p.yaml:4:50 run.retries: unknown key "retries" (received "retries"; allowed "concurrency", "maxAttempts" or "rateLimitPerMinute")",
        "p.yaml:5:21 media.screenshot: expected a boolean (true or false) (received "yes" (a string))",
      ]
    `);
  });
});

describe('rules', () => {
  it('a budget over searches that ask for PDFs with unbounded pages is warned about', () => {
    const text = (parsers: string[], budget = true) =>
      yaml([
        'name: x',
        'defaults:',
        '  categories: [pdf]',
        '  scrapeOptions:',
        '    formats: [markdown]',
        ...parsers,
        'searches:',
        '  - query: annual report',
        ...(budget ? ['budget:', '  maxCredits: 40'] : []),
      ]);
    expect(messages(text([]))).toEqual([
      "p.yaml:9:15 budget.maxCredits: warning: a search (defaults.scrapeOptions) asks for PDFs and scrapes them with no maxPages: each page beyond a PDF's first costs a credit no estimate foresees, so the run may spend past its budget; bound them with scrapeOptions.parsers: [{type: pdf, maxPages: N}]",
    ]);
    // Bounded pages, PDFs not parsed, or no budget: nothing to say.
    expect(messages(text(['    parsers: [{type: pdf, maxPages: 5}]']))).toEqual([]);
    expect(messages(text(['    parsers: []']))).toEqual([]);
    expect(messages(text([], false))).toEqual([]);
  });

  it('domainsExclusive: points at excludeDomains, even when it comes from defaults', () => {
    const text = yaml([
      'name: x',
      'defaults:',
      '  excludeDomains: [b.com]',
      'searches:',
      '  - query: a',
      '    includeDomains: [a.com]',
    ]);
    expect(messages(text)).toMatchInlineSnapshot(`
      [
        "p.yaml:3:19 defaults.excludeDomains: includeDomains and excludeDomains cannot both be specified (allowed includeDomains or excludeDomains, not both)",
      ]
    `);
  });

  it('waitForWithinTimeout: explicit timeout, merged from defaults', () => {
    const text = yaml([
      'name: x',
      'defaults:',
      '  scrapeOptions: {timeout: 10000}',
      'searches:',
      '  - query: a',
      '    scrapeOptions: {waitFor: 6000}',
    ]);
    expect(messages(text)).toMatchInlineSnapshot(`
      [
        "p.yaml:6:30 searches[0].scrapeOptions.waitFor: waitFor must not exceed half of timeout (received 6000 ms with timeout 10000 ms; allowed at most 5000 ms)",
      ]
    `);
  });

  it('waitFor over half of a timeout nobody wrote is fine (that default is not sent)', () => {
    const text = yaml([
      'name: x',
      'searches:',
      '  - query: a',
      '    scrapeOptions: {waitFor: 40000}',
    ]);
    expect(messages(text)).toEqual([]);
  });

  it('duplicateSearchIds', () => {
    const text = yaml([
      'name: x',
      'searches:',
      '  - {id: a, query: one}',
      '  - {id: a, query: two}',
    ]);
    expect(messages(text)).toMatchInlineSnapshot(`
      [
        "p.yaml:4:10 searches[1].id: duplicate search id (first used by searches[0]) (received "a"; allowed an id no other search uses)",
      ]
    `);
  });

  it('placeholdersHaveValues, with a suggestion from the matrix keys', () => {
    const text = yaml([
      'name: x',
      'searches:',
      '  - query: "{topc} news"',
      '    matrix: {topic: [a, b]}',
      '  - query: "{alone}"',
    ]);
    expect(messages(text)).toMatchInlineSnapshot(`
      [
        "p.yaml:3:12 searches[0].query: placeholder {topc} has no matrix value; did you mean "topic"? (received {topc}; allowed placeholders "{topic}")",
        "p.yaml:4:14 searches[0].matrix.topic: matrix key "topic" is neither a search-request field nor used as {topic} in query; did you mean "topc"? (received "topic"; allowed a search-request field or a placeholder used in query)",
        "p.yaml:5:12 searches[1].query: placeholder {alone} has no matrix value (received {alone}; allowed a "matrix:" with a list for alone (write {{ and }} for literal braces))",
      ]
    `);
  });

  it('a matrix key written with braces is told to drop them, with no "{{" advice', () => {
    const text = yaml([
      'name: a',
      'searches:',
      '  - query: "{topic} news"',
      '    matrix:',
      '      "{topic}": [energy, housing]',
    ]);
    expect(messages(text)).toMatchInlineSnapshot(`
      [
        "p.yaml:3:12 searches[0].query: placeholder {topic} has no matrix value: the matrix key is written "{topic}"; write "topic:", without braces (received {topic}; allowed a matrix key topic)",
        "p.yaml:5:7 searches[0].matrix["{topic}"]: matrix key "{topic}" is written with braces; write "topic:" (braces go in query only) (received "{topic}"; allowed "topic")",
      ]
    `);
  });

  it('matrixKeysUsed and matrixFieldNotAlsoSet', () => {
    const text = yaml([
      'name: x',
      'searches:',
      '  - query: "news"',
      '    limit: 5',
      '    matrix:',
      '      limt: [1, 2]',
      '      limit: [3, 4]',
    ]);
    expect(messages(text)).toMatchInlineSnapshot(`
      [
        "p.yaml:6:7 searches[0].matrix.limt: matrix key "limt" is neither a search-request field nor used as {limt} in query; did you mean "limit"? (received "limt"; allowed a search-request field or a placeholder used in query)",
        "p.yaml:7:7 searches[0].matrix.limit: limit is set both by the search and by its matrix; keep one",
      ]
    `);
  });

  it('placeholderValuesAreScalars', () => {
    const text = yaml([
      'name: x',
      'searches:',
      '  - query: "{sources}"',
      '    matrix:',
      '      sources: [[web], [news]]',
    ]);
    expect(messages(text)).toMatchInlineSnapshot(`
      [
        "p.yaml:5:17 searches[0].matrix.sources[0]: {sources} is used in query, so its values must be text, numbers or booleans (received ["web"])",
        "p.yaml:5:24 searches[0].matrix.sources[1]: {sources} is used in query, so its values must be text, numbers or booleans (received ["news"])",
      ]
    `);
  });

  it('queryPresent', () => {
    expect(messages(yaml(['name: x', 'searches:', '  - limit: 3']))).toMatchInlineSnapshot(`
      [
        "p.yaml:3:5 searches[0]: query is required (in the search or in its matrix)",
      ]
    `);
  });

  it('queryNotBlank: an empty literal, or a placeholder filled with nothing', () => {
    expect(
      messages(
        yaml([
          'name: x',
          'searches:',
          '  - query: ""',
          '  - query: "news {x}"',
          '    matrix:',
          '      x: [a, ""]',
          '  - query: "{y}"',
          '    matrix:',
          '      y: [ok, " ", fine]',
        ]),
      ),
    ).toEqual([
      'p.yaml:3:12 searches[0].query: query is blank: a search needs words to look for',
      'p.yaml:7:12 searches[2].query: query is blank: a search needs words to look for (with y= )',
    ]);
  });

  it('scheduleCron and scheduleTimeZone', () => {
    expect(
      messages(
        yaml([
          'name: x',
          'searches: [{query: a}]',
          'schedule:',
          '  cron: "61 * * * *"',
          '  tz: Mars/Olympus',
        ]),
      ),
    ).toMatchInlineSnapshot(`
      [
        "p.yaml:4:9 schedule.cron: invalid cron expression: Constraint error, got value 61 expected range 0-59 (received "61 * * * *")",
        "p.yaml:5:7 schedule.tz: unknown time zone (received "Mars/Olympus"; allowed an IANA time zone such as "UTC" or "Europe/Berlin")",
      ]
    `);
    expect(
      messages(yaml(['name: x', 'searches: [{query: a}]', 'schedule: {cron: "* * * *"}'])),
    ).toMatchInlineSnapshot(`
      [
        "p.yaml:3:18 schedule.cron: cron expression must have 5 fields (minute hour day month weekday) or 6 (seconds first) (received 4 fields ("* * * *"); allowed 5 or 6 fields, e.g. "0 6 * * 1")",
      ]
    `);
    valid(
      yaml([
        'name: x',
        'searches: [{query: a}]',
        'schedule: {cron: "0 */5 * * * *", tz: Asia/Tokyo}',
      ]),
    );
  });

  it('expansionWithinLimit', () => {
    const values = `[${Array.from({ length: 100 }, (_, i) => i).join(', ')}]`;
    const text = yaml([
      'name: x',
      'searches:',
      '  - query: "{a} {b} {c} {d}"',
      '    matrix:',
      `      a: ${values}`,
      `      b: ${values}`,
      `      c: ${values}`,
      `      d: ${values}`,
    ]);
    expect(messages(text)).toMatchInlineSnapshot(`
      [
        "p.yaml:5:7 searches[0].matrix: the pipeline expands to too many searches (received 100000000 searches by here; allowed at most 10000000)",
      ]
    `);
  });

  it('media saved but not requested, and requested but not saved', () => {
    const text = yaml([
      'name: x',
      'searches:',
      '  - query: a',
      '    scrapeOptions: {formats: [markdown, audio]}',
      'media: {video: true}',
    ]);
    const result = valid(text);
    expect(messages(text)).toMatchInlineSnapshot(`
      [
        "p.yaml:4:41 searches[0].scrapeOptions.formats[1]: warning: audio URLs expire after 1 hour and will not be saved; set media.audio: true to keep them",
        "p.yaml:5:16 media.video: warning: no search requests the video format, so there is no video to save",
      ]
    `);
    expect(result.warnings.every((w) => w.severity === 'warning')).toBe(true);
  });

  it('action screenshots and PDFs are media too: media.actions saves them', () => {
    const text = yaml([
      'name: x',
      'searches:',
      '  - query: a',
      '    scrapeOptions: {formats: [markdown], actions: [{type: wait, milliseconds: 5}, {type: pdf}]}',
    ]);
    expect(messages(text)).toMatchInlineSnapshot(`
      [
        "p.yaml:4:83 searches[0].scrapeOptions.actions[1]: warning: the screenshots and PDFs of actions are signed URLs that expire and will not be saved; set media.actions: true to keep them",
      ]
    `);
    const saved = yaml([
      'name: x',
      'searches:',
      '  - query: a',
      '    scrapeOptions: {formats: [markdown], actions: [{type: screenshot}]}',
      'media: {actions: true}',
    ]);
    expect(messages(saved)).toEqual([]);
    const unused = yaml(['name: x', 'searches:', '  - query: a', 'media: {actions: true}']);
    expect(messages(unused)).toMatchInlineSnapshot(`
      [
        "p.yaml:4:18 media.actions: warning: no search runs a screenshot or pdf action, so there are no action outputs to save",
      ]
    `);
  });

  it('media.dir stays inside the data directory', () => {
    for (const dir of ['../out', '/var/media', 'a/../../b', '.', 'C:/media']) {
      const text = yaml(['name: x', 'searches:', '  - query: a', `media: {dir: "${dir}"}`]);
      expect(messages(text), dir).toEqual([
        'p.yaml:4:14 media.dir: media.dir must be a folder inside the data directory: relative, without ".."',
      ]);
    }
    const fine = yaml(['name: x', 'searches:', '  - query: a', 'media: {dir: media/capture}']);
    expect(messages(fine)).toEqual([]);
    // A control character is refused here, not by the first download that makes the folder.
    const nul = yaml(['name: x', 'searches:', '  - query: a', 'media: {dir: "m\\0x"}']);
    expect(messages(nul)).toEqual([
      'p.yaml:4:14 media.dir: media.dir must not contain control characters',
    ]);
  });
});

describe('matrix and placeholders', () => {
  it('expands the cartesian product, first key outermost, fields set and placeholders filled', () => {
    const text = yaml([
      'name: x',
      'searches:',
      '  - query: "{topic} in {country}"',
      '    id: news',
      '    tags: [t]',
      '    matrix:',
      '      topic: [ai, ml]',
      '      country: [US, DE]',
    ]);
    const tasks = plan(valid(text).value).tasks;
    expect(tasks.map((t) => [t.request.query, t.request.country, t.searchId, t.tags])).toEqual([
      ['ai in US', 'US', 'news', ['t']],
      ['ai in DE', 'DE', 'news', ['t']],
      ['ml in US', 'US', 'news', ['t']],
      ['ml in DE', 'DE', 'news', ['t']],
    ]);
    expect(tasks[1]?.vars).toEqual({ topic: 'ai', country: 'DE' });
  });

  it('{{ and }} are literal braces', () => {
    const text = yaml([
      'name: x',
      'searches:',
      '  - query: "{{json}} {t}"',
      '    matrix: {t: [1]}',
    ]);
    expect(plan(valid(text).value).tasks[0]?.request.query).toBe('{json} 1');
    // Also in a query without placeholders, with or without a matrix of fields.
    const literal = yaml([
      'name: x',
      'searches:',
      '  - query: "literal {{y}}"',
      '  - query: "{{z}}"',
      '    matrix: {limit: [1, 2]}',
    ]);
    expect(plan(valid(literal).value).tasks.map((t) => t.request.query)).toEqual([
      'literal {y}',
      '{z}',
      '{z}',
    ]);
  });

  it('points at the matrix value that produced a bad search', () => {
    const text = yaml([
      'name: x',
      'searches:',
      '  - query: "{t}"',
      '    matrix:',
      `      t: [ok, ${'x'.repeat(501)}, ${'y'.repeat(600)}]`,
    ]);
    expect(messages(text).map((m) => m.replace(/[xy]{20,}/g, '…'))).toMatchInlineSnapshot(`
      [
        "p.yaml:3:12 searches[0].query: too long (with t=…) (and 1 more combination) (received 501 characters; allowed at most 500 characters)",
      ]
    `);
  });

  it('points at a matrix value for a field error', () => {
    const text = yaml([
      'name: x',
      'searches:',
      '  - query: a',
      '    matrix:',
      '      limit: [5, 0]',
    ]);
    expect(messages(text)).toMatchInlineSnapshot(`
      [
        "p.yaml:5:18 searches[0].matrix.limit[1]: too small (received 0; allowed at least 1)",
      ]
    `);
  });
});

describe('defaults', () => {
  it('apply to every search unless overridden; scrapeOptions merge field by field', () => {
    const text = yaml([
      'name: x',
      'defaults:',
      '  limit: 5',
      '  country: DE',
      '  scrapeOptions: {formats: [markdown], timeout: 30000}',
      'searches:',
      '  - query: a',
      '  - query: b',
      '    limit: 7',
      '    scrapeOptions: {formats: [html]}',
    ]);
    const [a, b] = plan(valid(text).value).tasks;
    expect(a?.request).toMatchObject({ limit: 5, country: 'DE' });
    expect(a?.request.scrapeOptions).toMatchObject({
      formats: [{ type: 'markdown' }],
      timeout: 30000,
    });
    expect(b?.request).toMatchObject({ limit: 7, country: 'DE' });
    expect(b?.request.scrapeOptions).toMatchObject({ formats: [{ type: 'html' }], timeout: 30000 });
  });

  it('defaults may not set query', () => {
    expect(
      messages(yaml(['name: x', 'defaults: {query: a}', 'searches: [{query: b}]'])),
    ).toMatchInlineSnapshot(`
      [
        "p.yaml:2:12 defaults.query: unknown key "query" (received "query"; allowed "limit", "sources", "categories", "includeDomains", "excludeDomains", "tbs", "location", "country", "safe", "timeout", "ignoreInvalidURLs", "highlights", "enterprise", "scrapeOptions" or "threatProtection")",
      ]
    `);
  });
});

describe('duplicates', () => {
  it('warns about searches with the same normalised request and plans them once', () => {
    const text = yaml([
      'name: x',
      'searches:',
      '  - query: a',
      '  - query: a',
      '    limit: 10',
      '    sources: [web]',
      '  - query: "{t}"',
      '    matrix: {t: [b, b, a]}',
    ]);
    const result = valid(text);
    expect(
      result.warnings.map((w) => `${w.line}:${w.col} ${w.path} ${w.message}`),
    ).toMatchInlineSnapshot(`
      [
        "4:5 searches[1] expands to a search that is the same request as searches[0]; planned once",
        "7:5 searches[2] expands to a search that is the same request as searches[0] (t=a); planned once",
        "8:13 searches[2].matrix expands to a search that is the same request as another combination of this matrix (t=b repeats t=b); planned once",
      ]
    `);
    expect(result.stats).toEqual({ items: 3, expanded: 5, unique: 2 });
    const planned = plan(result.value);
    expect(planned.tasks.map((t) => t.request.query)).toEqual(['a', 'b']);
    expect(planned.duplicates).toBe(3);
  });
});
