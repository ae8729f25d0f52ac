import { describe, expect, it } from 'vitest';
import {
  ActionSchema,
  FormatSchema,
  pdfParsingEnabled,
  ScrapeOptionsObjectSchema,
  ScrapeOptionsSchema,
  WAIT_FOR_TIMEOUT_MESSAGE,
} from '../../../src/contract/index.ts';
import { chars, searchIssues, withScrape } from './helpers.ts';

const valid = (options: unknown) => expect(searchIssues(withScrape(options))).toEqual([]);
const invalid = (options: unknown) => {
  const issues = searchIssues(withScrape(options));
  expect(issues.length).toBeGreaterThan(0);
  return issues;
};

describe('ScrapeOptionsSchema: bounds', () => {
  it('timeout 1000..300000', () => {
    valid({ timeout: 1000 });
    valid({ timeout: 300_000 });
    expect(invalid({ timeout: 999 })).toMatchInlineSnapshot(`
      [
        "scrapeOptions.timeout: Too small: expected number to be >=1000",
      ]
    `);
    expect(invalid({ timeout: 300_001 })).toMatchInlineSnapshot(`
      [
        "scrapeOptions.timeout: Too big: expected number to be <=300000",
      ]
    `);
  });

  it('maxAge, minAge, waitFor are non-negative integers', () => {
    valid({ maxAge: 0, minAge: 1, waitFor: 0 });
    for (const key of ['maxAge', 'minAge', 'waitFor']) {
      invalid({ [key]: -1 });
      invalid({ [key]: 1.5 });
      invalid({ [key]: '100' });
    }
  });

  it('profile.name 1..128', () => {
    valid({ profile: { name: 'a' } });
    valid({ profile: { name: chars(128), saveChanges: false } });
    expect(invalid({ profile: { name: '' } })).toHaveLength(1);
    expect(invalid({ profile: { name: chars(129) } })).toMatchInlineSnapshot(`
      [
        "scrapeOptions.profile.name: Too big: expected string to have <=128 characters",
      ]
    `);
    expect(invalid({ profile: {} })).toHaveLength(1);
    expect(invalid({ profile: { name: 'a', shared: true } })).toHaveLength(1);
  });

  it('auditMetadata.username up to 1024, no other keys', () => {
    valid({ auditMetadata: { username: chars(1024) } });
    expect(invalid({ auditMetadata: { username: chars(1025) } })).toMatchInlineSnapshot(`
      [
        "scrapeOptions.auditMetadata.username: Too big: expected string to have <=1024 characters",
      ]
    `);
    expect(invalid({ auditMetadata: {} })).toHaveLength(1);
    expect(invalid({ auditMetadata: { username: 'a', team: 'b' } })).toMatchInlineSnapshot(`
      [
        "scrapeOptions.auditMetadata: Unrecognized key: "team"",
      ]
    `);
  });

  it('rejects unknown keys and does not coerce booleans', () => {
    expect(invalid({ onlyMainContent: 'false' })).toHaveLength(1);
    expect(invalid({ parsePDF: true })).toMatchInlineSnapshot(`
      [
        "scrapeOptions: Unrecognized key: "parsePDF"",
      ]
    `);
  });

  it('fastMode: a boolean, as the hosted service accepts and the Python client sends', () => {
    valid({ fastMode: false });
    valid({ fastMode: true });
    expect(invalid({ fastMode: 'false' })).toHaveLength(1);
  });

  it("rejects the hosted service's internal scrape fields", () => {
    for (const key of ['useMock', 'safeMode', '__experimental_omce', '__forceFirePDF']) {
      expect(invalid({ [key]: true })).toEqual([`scrapeOptions: Unrecognized key: "${key}"`]);
    }
  });

  it('proxy basic|enhanced|auto', () => {
    for (const proxy of ['basic', 'enhanced', 'auto']) valid({ proxy });
    invalid({ proxy: 'residential' });
  });

  it('headers are strings', () => {
    valid({ headers: { 'User-Agent': 'x', Cookie: 'a=b' } });
    invalid({ headers: { 'X-Number': 1 } });
  });
});

describe('ScrapeOptionsSchema: waitFor vs timeout', () => {
  it('allows waitFor up to half of an explicit timeout', () => {
    valid({ waitFor: 5000, timeout: 10_000 });
    expect(invalid({ waitFor: 5001, timeout: 10_000 })).toEqual([
      `scrapeOptions.waitFor: ${WAIT_FOR_TIMEOUT_MESSAGE}`,
    ]);
  });

  it('does not apply the default timeout (the reference states no relation)', () => {
    valid({ waitFor: 60_001 });
  });

  it('the object schema has no cross-field rule', () => {
    expect(ScrapeOptionsObjectSchema.safeParse({ waitFor: 9000, timeout: 1000 }).success).toBe(
      true,
    );
    expect(ScrapeOptionsSchema.safeParse({ waitFor: 9000, timeout: 1000 }).success).toBe(false);
  });
});

describe('ScrapeOptionsSchema: parsers', () => {
  it('accepts pdf strings and strict pdf objects', () => {
    valid({ parsers: [] });
    valid({ parsers: ['pdf'] });
    valid({
      parsers: [
        { type: 'pdf', mode: 'ocr', maxPages: 1, pages: true, blocks: true, pageMarkers: true },
        { type: 'pdf', mode: 'fast', maxPages: 10_000 },
      ],
    });
  });

  it('maxPages 1..10000, known modes, no extra keys', () => {
    invalid({ parsers: [{ type: 'pdf', maxPages: 0 }] });
    expect(invalid({ parsers: [{ type: 'pdf', maxPages: 10_001 }] })).toMatchInlineSnapshot(`
      [
        "scrapeOptions.parsers.0.maxPages: Too big: expected number to be <=10000",
      ]
    `);
    invalid({ parsers: [{ type: 'pdf', mode: 'slow' }] });
    invalid({ parsers: [{ type: 'pdf', extra: 1 }] });
    invalid({ parsers: ['image'] });
    invalid({ parsers: [{ type: 'image' }] });
  });

  it('pdfParsingEnabled', () => {
    expect(pdfParsingEnabled(undefined)).toBe(true);
    expect(pdfParsingEnabled({})).toBe(true);
    expect(pdfParsingEnabled({ parsers: [] })).toBe(false);
    expect(pdfParsingEnabled({ parsers: [{ type: 'pdf', mode: 'fast' }] })).toBe(true);
  });
});

describe('ScrapeOptionsSchema: location and redactPII', () => {
  it('location.country ^[A-Z]{2}$', () => {
    valid({ location: {} });
    valid({ location: { country: 'DE', languages: ['de-DE', 'en'] } });
    for (const country of ['de', 'DEU', 'us-generic', 'D']) invalid({ location: { country } });
    invalid({ location: { country: 'US', city: 'NYC' } });
  });

  it('redactPII boolean or strict options', () => {
    valid({ redactPII: true });
    valid({ redactPII: false });
    valid({
      redactPII: { mode: 'fast', entities: ['PERSON', 'SECRET'], replaceStyle: 'remove' },
    });
    invalid({ redactPII: { mode: 'precise' } });
    invalid({ redactPII: { entities: ['SSN'] } });
    invalid({ redactPII: { replaceStyle: 'blur' } });
    invalid({ redactPII: { other: 1 } });
    invalid({ redactPII: 'yes' });
  });
});

describe('FormatSchema', () => {
  const ok = (format: unknown) => expect(FormatSchema.safeParse(format).success).toBe(true);
  const bad = (format: unknown) => {
    const result = FormatSchema.safeParse(format);
    expect(result.success).toBe(false);
    return result.success
      ? []
      : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };

  it.each([
    'markdown',
    'summary',
    'html',
    'rawHtml',
    'links',
    'images',
    'branding',
    'product',
    'menu',
    'screenshot',
    'json',
    'changeTracking',
    'audio',
    'video',
  ])('accepts %s as string and as {type}', (type) => {
    ok(type);
    ok({ type });
  });

  it('question and highlights need their text', () => {
    bad('question');
    bad('highlights');
    bad({ type: 'question' });
    bad({ type: 'highlights' });
    ok({ type: 'question', question: chars(10_000) });
    ok({ type: 'highlights', query: chars(10_000) });
    expect(bad({ type: 'question', question: chars(10_001) })).toMatchInlineSnapshot(`
      [
        "question: Too big: expected string to have <=10000 characters",
      ]
    `);
    bad({ type: 'highlights', query: chars(10_001) });
  });

  it('screenshot: quality 1..100 integer, viewport needs width and height, extra keys kept', () => {
    ok({ type: 'screenshot', fullPage: true, quality: 1, viewport: { width: 1, height: 4321 } });
    ok({ type: 'screenshot', quality: 100 });
    expect(bad({ type: 'screenshot', quality: 0 })).toMatchInlineSnapshot(`
      [
        "quality: Too small: expected number to be >=1",
      ]
    `);
    bad({ type: 'screenshot', quality: 101 });
    bad({ type: 'screenshot', quality: 55.5 });
    bad({ type: 'screenshot', viewport: { width: 800 } });
    expect(FormatSchema.parse({ type: 'screenshot', waitFor: 1 })).toEqual({
      type: 'screenshot',
      waitFor: 1,
    });
  });

  it('json and changeTracking', () => {
    ok({ type: 'json', schema: { type: 'object' }, prompt: 'p', checkPromptInjection: true });
    bad({ type: 'json', schema: 'object' });
    ok({ type: 'changeTracking', modes: ['git-diff', 'json'], schema: {}, prompt: 'p', tag: null });
    ok({ type: 'changeTracking', tag: 'branch' });
    bad({ type: 'changeTracking', modes: ['diff'] });
    bad({ type: 'changeTracking', tag: 5 });
  });

  it('rejects unknown keys in format objects other than screenshot', () => {
    for (const type of ['markdown', 'summary', 'audio', 'video', 'links']) bad({ type, x: 1 });
    expect(bad({ type: 'json', prompt: 'p', extra: 1 })).toMatchInlineSnapshot(`
      [
        ": Unrecognized key: "extra"",
      ]
    `);
    bad({ type: 'question', question: 'q', x: 1 });
  });

  it('rejects unknown formats', () => {
    bad('rawBase64');
    bad({ type: 'deterministicJson' });
    bad({});
  });
});

describe('ActionSchema', () => {
  const ok = (action: unknown) => expect(ActionSchema.safeParse(action).success).toBe(true);
  const bad = (action: unknown) => {
    const result = ActionSchema.safeParse(action);
    expect(result.success).toBe(false);
    return result.success
      ? []
      : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };

  it('wait: exactly one of milliseconds (>= 1) or selector', () => {
    ok({ type: 'wait', milliseconds: 1 });
    ok({ type: 'wait', selector: '#main' });
    expect(bad({ type: 'wait', milliseconds: 0 })).toMatchInlineSnapshot(`
      [
        "milliseconds: Too small: expected number to be >=1",
      ]
    `);
    expect(bad({ type: 'wait' })).toMatchInlineSnapshot(`
      [
        ": wait needs exactly one of milliseconds or selector",
      ]
    `);
    bad({ type: 'wait', milliseconds: 5, selector: '#a' });
    bad({ type: 'wait', milliseconds: 1.5 });
    bad({ type: 'wait', milliseconds: 5, extra: 1 });
  });

  it('every other action with its fields', () => {
    ok({ type: 'screenshot', fullPage: true, quality: 100, viewport: { width: 10, height: 10 } });
    ok({ type: 'click', selector: 'a', all: true });
    ok({ type: 'write', text: 'x' });
    ok({ type: 'press', key: 'Enter' });
    ok({ type: 'scroll' });
    ok({ type: 'scroll', direction: 'up', selector: '#list' });
    ok({ type: 'scrape' });
    ok({ type: 'executeJavascript', script: 'return 1' });
    for (const format of ['A0', 'A6', 'Letter', 'Legal', 'Tabloid', 'Ledger']) {
      ok({ type: 'pdf', format, landscape: true, scale: 0.5 });
    }
  });

  it('rejects missing required fields, bad values and unknown keys', () => {
    bad({ type: 'click' });
    bad({ type: 'write' });
    bad({ type: 'press' });
    bad({ type: 'executeJavascript' });
    expect(bad({ type: 'scroll', direction: 'left' })).toMatchInlineSnapshot(`
      [
        "direction: Invalid option: expected one of "up"|"down"",
      ]
    `);
    bad({ type: 'pdf', format: 'A7' });
    bad({ type: 'screenshot', quality: 0 });
    bad({ type: 'screenshot', viewport: { height: 10 } });
    bad({ type: 'scrape', url: 'x' });
    bad({ type: 'hover', selector: 'a' });
  });

  it('actions must be an array', () => {
    expect(invalid({ actions: { type: 'scrape' } })).toMatchInlineSnapshot(`
      [
        "scrapeOptions.actions: Invalid input: expected array, received object",
      ]
    `);
  });
});
