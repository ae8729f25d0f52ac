import { describe, expect, it } from 'vitest';
import { hostedServiceWarnings, SearchRequestSchema } from '../../../src/contract/index.ts';

const warn = (scrapeOptions: unknown) =>
  hostedServiceWarnings(SearchRequestSchema.parse({ query: 'q', scrapeOptions })).map((w) =>
    w.path.join('.'),
  );

describe('hostedServiceWarnings', () => {
  it('flags what the hosted service refuses while the reference allows it', () => {
    expect(warn({ waitFor: 60_001 })).toEqual(['scrapeOptions.waitFor', 'scrapeOptions.actions']);
    expect(warn({ waitFor: 30_000 })).toEqual([]);
    expect(
      warn({
        actions: [
          { type: 'wait', milliseconds: 59_001 },
          { type: 'wait', selector: '#a' },
        ],
      }),
    ).toEqual(['scrapeOptions.actions']);
    expect(warn({ actions: [{ type: 'wait', milliseconds: 60_000 }] })).toEqual([]);
    expect(warn({ formats: ['markdown', { type: 'changeTracking' }] })).toEqual([
      'scrapeOptions.formats.1',
    ]);
    expect(hostedServiceWarnings({ query: 'q' })).toEqual([]);
  });
});
