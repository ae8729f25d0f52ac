import { describe, expect, it } from 'vitest';
import { SearchRequestSchema } from '../../../src/contract/index.ts';
import { type ConformanceCase, conformanceCases as cases } from '../../helpers/conformance.ts';

/** harvest follows the reference; where it is silent, the hosted service. */
const expected = (c: ConformanceCase) =>
  c.reference === 'ambiguous' ? c.hosted_service : c.reference;

/** A hosted path matches an issue path that equals it or lies below it ('' = the root only). */
const covers = (hosted: string, issue: string) =>
  hosted === '' ? issue === '' : issue === hosted || issue.startsWith(`${hosted}.`);

describe('conformance: POST /v2/search bodies', () => {
  it('has the 100 cases', () => {
    expect(cases).toHaveLength(100);
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const result = SearchRequestSchema.safeParse(c.body);
    expect(result.success ? 'valid' : 'invalid', c.why).toBe(expected(c));
    if (!result.success && c.hosted_service === 'invalid') {
      const paths = result.error.issues.map((issue) => issue.path.join('.'));
      for (const hosted of c.hosted_service_error_paths ?? []) {
        expect(
          paths.some((path) => covers(hosted, path)),
          `issue paths ${JSON.stringify(paths)} should include "${hosted}"`,
        ).toBe(true);
      }
    }
  });
});
