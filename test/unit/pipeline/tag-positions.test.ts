import { describe, expect, it } from 'vitest';
import { parsePipeline } from '../../../src/pipeline/index.ts';

describe('positions of explicit YAML tags', () => {
  it('points a `!!str` tag at its first "!" (col 12), not at the second one', () => {
    const text = ['name: t', 'searches:', '  - query: !!str x', ''].join('\n');
    //                                    123456789012
    const result = parsePipeline(text, 'p.yaml');
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const tag = result.issues.find((issue) =>
      issue.message.includes('YAML tags are not supported'),
    );
    expect(tag).toMatchObject({ file: 'p.yaml', line: 3, col: 12 });
  });

  it('points a `!!int` tag of a nested value at its first "!"', () => {
    const text = ['name: t', 'searches:', '  - query: x', '    limit: !!int 5', ''].join('\n');
    //                                                    123456789012
    const result = parsePipeline(text, 'p.yaml');
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues[0]).toMatchObject({ line: 4, col: 12 });
  });
});
