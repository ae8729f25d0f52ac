import { describe, expect, it } from 'vitest';
import { parsePipeline } from '../../../src/pipeline/index.ts';

const text = (placeholder: string) =>
  [
    'name: proto-names',
    'searches:',
    `  - query: "{topic} {${placeholder}}"`,
    '    matrix:',
    '      topic: [a, b]',
    '',
  ].join('\n');

describe('placeholders named like Object.prototype members', () => {
  for (const name of ['constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
    it(`reports {${name}} without a matrix value as an issue instead of throwing`, () => {
      // Only the matrix's own keys give a value: these names are inherited members of every
      // object, which must not be taken for one (nor crash the check).
      let result: ReturnType<typeof parsePipeline> | undefined;
      expect(() => {
        result = parsePipeline(text(name), 'p.yaml');
      }).not.toThrow();
      expect(result?.ok).toBe(false);
      if (result && !result.ok) {
        expect(result.issues.map((issue) => issue.code)).toContain('PLACEHOLDER_WITHOUT_VALUE');
        expect(result.issues[0]).toMatchObject({ line: 3, path: 'searches[0].query' });
      }
    });
  }
});
