/**
 * What the client sends for a planned task: planning fills in every documented default, and a
 * filled-in `scrapeOptions.timeout` must not turn a body the contract accepts into one it refuses
 * (`waitFor` over half of a timeout nobody wrote). Real sandbox on port 0 for the wire check.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../../src/api/index.ts';
import { requestToSend, SearchRequestSchema } from '../../../src/contract/index.ts';
import { plan } from '../../../src/pipeline/index.ts';
import { parsePipeline } from '../../../src/pipeline/validate.ts';
import { type RunningSandbox, startSandbox } from '../../../src/sandbox/index.ts';
import { conformanceCases } from '../../helpers/conformance.ts';

function planned(searchYaml: string) {
  const parsed = parsePipeline(`name: sent\nsearches:\n  - ${searchYaml}\n`, 'sent.yaml');
  if (!parsed.ok) return undefined;
  return plan(parsed.value).tasks[0]!.request;
}

describe('requestToSend', () => {
  it('keeps every conformance body the contract accepts acceptable once planned', () => {
    const refused: string[] = [];
    for (const c of conformanceCases) {
      if (!SearchRequestSchema.safeParse(c.body).success) continue;
      const request = planned(JSON.stringify(c.body));
      if (!request) continue; // refused by a pipeline rule (a blank query, say)
      const sent = JSON.parse(JSON.stringify(requestToSend(request)));
      if (!SearchRequestSchema.safeParse(sent).success) refused.push(c.name);
    }
    expect(refused).toEqual([]);
  });

  it('leaves out only a timeout that breaks the waitFor rule, and mutates nothing', () => {
    const request = planned('{query: a, scrapeOptions: {formats: [markdown], waitFor: 40000}}')!;
    expect(request.scrapeOptions?.timeout).toBe(60_000);
    const sent = requestToSend(request);
    expect(sent.scrapeOptions).not.toHaveProperty('timeout');
    expect(sent.scrapeOptions?.waitFor).toBe(40_000);
    expect(request.scrapeOptions?.timeout).toBe(60_000);
    const fine = planned('{query: a, scrapeOptions: {formats: [markdown], waitFor: 20000}}')!;
    expect(requestToSend(fine)).toBe(fine);
  });

  describe('over the wire', () => {
    let sandbox: RunningSandbox;
    beforeAll(async () => {
      sandbox = await startSandbox({ host: '127.0.0.1', port: 0 });
    });
    afterAll(async () => {
      await sandbox?.close();
    });

    it('a planned waitFor of 40000 ms without a timeout is answered, not refused', async () => {
      const request = planned('{query: a, scrapeOptions: {formats: [markdown], waitFor: 40000}}')!;
      const client = createApiClient({ baseUrl: sandbox.url, apiKey: 'fc-sandbox' });
      try {
        const answer = await client.search(request);
        expect(answer.status).toBe(200);
      } finally {
        await client.close();
      }
    });
  });
});
