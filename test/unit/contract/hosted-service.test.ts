import { describe, expect, it } from 'vitest';
import { hostedServiceWarnings, SearchRequestSchema } from '../../../src/contract/index.ts';
import { conformanceCases } from '../../helpers/conformance.ts';

const warn = (scrapeOptions: unknown) =>
  hostedServiceWarnings(SearchRequestSchema.parse({ query: 'q', scrapeOptions })).map((w) =>
    w.path.join('.'),
  );

/** The conformance cases harvest accepts: the hosted service may still refuse some. */
const acceptedCases = conformanceCases.filter((c) => SearchRequestSchema.safeParse(c.body).success);

describe('hostedServiceWarnings', () => {
  it('flags what the hosted service refuses while the reference allows it', () => {
    expect(warn({ waitFor: 60_001 })).toEqual(['scrapeOptions.waitFor', 'scrapeOptions.actions']);
    expect(warn({ waitFor: 30_000 })).toEqual([]);
    // Over half of the default timeout is fine: that timeout is not sent (requestToSend).
    expect(warn({ waitFor: 60_000 })).toEqual([]);
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
    expect(
      warn({ formats: [{ type: 'screenshot', viewport: { width: 7681, height: 4320 } }] }),
    ).toEqual(['scrapeOptions.formats.0.viewport.width']);
    expect(
      warn({ actions: [{ type: 'screenshot', viewport: { width: 1, height: 4321 } }] }),
    ).toEqual(['scrapeOptions.actions.0.viewport.height']);
    expect(hostedServiceWarnings({ query: 'q' })).toEqual([]);
  });

  it.each(acceptedCases.map((c) => [c.name, c] as const))(
    'conformance: %s is flagged exactly when the hosted service refuses it',
    (_name, c) => {
      const paths = hostedServiceWarnings(SearchRequestSchema.parse(c.body)).map((w) =>
        w.path.join('.'),
      );
      if (c.hosted_service === 'valid') expect(paths).toEqual([]);
      else expect(paths).toEqual(expect.arrayContaining(c.hosted_service_error_paths ?? []));
      if (c.hosted_service === 'invalid') expect(paths.length).toBeGreaterThan(0);
    },
  );
});
