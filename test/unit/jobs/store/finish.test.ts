import { describe, expect, it } from 'vitest';
import { callsToSettle } from '../../../../jobs/store/finish.ts';

const call = (over: Record<string, unknown>) => ({
  type: 'call',
  runId: 'run-1',
  callId: 'call-1',
  outcome: 'ok',
  creditsUsed: 3,
  ...over,
});

describe('callsToSettle', () => {
  it('settles a call at its credits, an implausible one at its request bound', () => {
    expect(
      callsToSettle([
        call({}),
        call({ callId: 'call-2', creditsUsed: 1e15, creditsMax: 12, creditsAnomaly: true }),
        call({ callId: 'call-3', outcome: 'LOST', creditsUsed: null }),
        { type: 'task', runId: 'run-1', taskKey: 't', status: 'done' },
      ]),
    ).toEqual([
      { runId: 'run-1', callId: 'call-1', credits: 3 },
      { runId: 'run-1', callId: 'call-2', credits: 12 },
    ]);
  });
});
