/**
 * CSV fields: what harvest writes for a text is what Papa Parse writes for it, quoted or not,
 * with formulas neutralised in text cells (or not, with csvRaw).
 */
import Papa from 'papaparse';
import { describe, expect, it } from 'vitest';
import { csvField, csvLines, csvTextField, FORMULA_START } from '../../../src/report/export/csv.ts';
import { RESULT_COLUMNS } from '../../../src/store/index.ts';

const OPTIONS = { newline: '\r\n', quotes: false, header: false } as const;

const TEXTS = [
  '',
  'plain',
  'https://example.com/a?b=1&c=2',
  'a,b',
  'say "hi"',
  '"',
  'line\nbreak',
  'cr\ronly',
  'crlf\r\n',
  ' leading',
  'trailing ',
  ' ',
  'inner space',
  '\ttab',
  '\ufeffbom',
  'mid\ufeffbom',
  '=SUM(A1)',
  '+1',
  '-1',
  '@x',
  "'quoted'",
  'Zürich — 東京 🚀',
  '\ud800 lone surrogate',
  '{"json":[1,2,"x"]}',
  '\u00a0nbsp\u00a0',
  '\u2028separator',
];

describe('csvField', () => {
  it.each(TEXTS)('writes %j as Papa Parse does', (text) => {
    expect(csvField(text)).toBe(Papa.unparse([[text]], OPTIONS));
  });

  it('writes every ASCII character, alone and between letters, as Papa Parse does', () => {
    for (let code = 0; code < 128; code++) {
      const c = String.fromCharCode(code);
      for (const text of [c, `a${c}b`, `${c}a`, `a${c}`]) {
        expect(csvField(text)).toBe(Papa.unparse([[text]], OPTIONS));
      }
    }
  });
});

/** Papa Parse's `escapeFormulae` with harvest's pattern (its own misses multi-line cells). */
const SAFE = { ...OPTIONS, escapeFormulae: FORMULA_START } as const;

describe('csvTextField: formulas neutralised', () => {
  it.each(TEXTS)('writes %j as Papa Parse does with escapeFormulae', (text) => {
    expect(csvTextField(text)).toBe(Papa.unparse([[text]], SAFE));
  });

  it('writes every ASCII character, alone and around letters, as Papa Parse does', () => {
    for (let code = 0; code < 128; code++) {
      const c = String.fromCharCode(code);
      for (const text of [c, `a${c}b`, `${c}a`, `a${c}`, `${c}\nb`]) {
        expect(csvTextField(text)).toBe(Papa.unparse([[text]], SAFE));
      }
    }
  });

  it("prefixes cells that begin with = + - @, a tab or a CR with ' (OWASP), a formula over lines too", () => {
    expect(csvTextField('=HYPERLINK("http://x","y")')).toBe('"\'=HYPERLINK(""http://x"",""y"")"');
    expect(csvTextField("+cmd|' /C calc'!A0")).toBe("\"'+cmd|' /C calc'!A0\"");
    expect(csvTextField('@SUM(1)')).toBe('"\'@SUM(1)"');
    expect(csvTextField('-2+3')).toBe('"\'-2+3"');
    expect(csvTextField('\t=1')).toBe('"\'\t=1"');
    expect(csvTextField('\r=1')).toBe('"\'\r=1"');
    // Papa Parse's own pattern (`/^[=+\-@\t\r].*$/`) lets this one through.
    expect(Papa.unparse([['=1+1\nx']], { ...OPTIONS, escapeFormulae: true })).toBe('"=1+1\nx"');
    expect(csvTextField('=1+1\nx')).toBe('"\'=1+1\nx"');
    for (const text of ['a=b', ' =1', 'plain', '1-2', "'=quoted"]) {
      expect(csvTextField(text)).toBe(csvField(text));
    }
  });
});

describe('csvLines', () => {
  const values: Record<string, unknown> = {
    title: '=1+1',
    position: -5,
    image_width: 7n,
    links: '[-1,"=x"]',
    fetched_at: Date.UTC(2025, 0, 2),
  };
  const columns = RESULT_COLUMNS.filter((c) => c.name in values);
  const row = columns.map((c) => values[c.name]) as never;

  it('neutralises text cells only: numbers stay numbers, JSON stays JSON', () => {
    expect(columns.map((c) => c.name).join(',')).toBe(
      'position,title,image_width,links,fetched_at',
    );
    expect(csvLines(columns)([row])).toBe(
      `-5,"'=1+1",7,"[-1,""=x""]",2025-01-02T00:00:00.000Z\r\n`,
    );
  });

  it('writes text cells as they are with csvRaw', () => {
    expect(csvLines(columns, { csvRaw: true })([row])).toBe(
      `-5,=1+1,7,"[-1,""=x""]",2025-01-02T00:00:00.000Z\r\n`,
    );
  });
});
