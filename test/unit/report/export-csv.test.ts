/** CSV fields: what harvest writes for a text is what Papa Parse writes for it, quoted or not. */
import Papa from 'papaparse';
import { describe, expect, it } from 'vitest';
import { csvField } from '../../../src/report/export/csv.ts';

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
