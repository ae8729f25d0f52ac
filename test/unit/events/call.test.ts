import { describe, expect, it } from 'vitest';
import type { ApiResponse } from '../../../src/api/index.ts';
import type { SearchResponse } from '../../../src/contract/index.ts';
import { budgetCredits, mostCredits, okCallEvent } from '../../../src/events/call.ts';

const base = {
  callId: '0190a000-0000-7000-8000-000000000001',
  runId: 'run-1',
  taskKey: 'task-1',
  attempt: 1,
  startedAt: 1_000,
};

function answer(creditsUsed: number): ApiResponse<SearchResponse> {
  return {
    status: 200,
    durationMs: 5,
    body: { success: true, data: {}, creditsUsed, id: 'search-1' },
  } as unknown as ApiResponse<SearchResponse>;
}

describe('mostCredits', () => {
  it('is the request upper bound by the credit rules', () => {
    expect(mostCredits({ query: 'q', limit: 2 })).toBe(2);
    expect(mostCredits({ query: 'q', limit: 10, scrapeOptions: { formats: ['markdown'] } })).toBe(
      12,
    );
  });

  it('is null when PDF pages are asked for without a bound', () => {
    expect(
      mostCredits({ query: 'q', categories: ['pdf'], scrapeOptions: { formats: ['markdown'] } }),
    ).toBeNull();
  });
});

describe('okCallEvent with a credits check', () => {
  const check = { maxCredits: 2, factor: 10 };

  it('keeps a plausible bill as it is', () => {
    const call = okCallEvent(answer(20), base, check);
    expect(call).toMatchObject({ creditsUsed: 20, creditsMax: 2 });
    expect(call.creditsAnomaly).toBeUndefined();
    expect(budgetCredits(call)).toBe(20);
  });

  it('flags a bill above the bound times the factor, stores it as billed, budgets the bound', () => {
    const call = okCallEvent(answer(1e15), base, check);
    expect(call).toMatchObject({ creditsUsed: 1e15, creditsMax: 2, creditsAnomaly: true });
    expect(budgetCredits(call)).toBe(2);
  });

  it('checks nothing without a bound', () => {
    const call = okCallEvent(answer(1e15), base, { maxCredits: null, factor: 10 });
    expect(call.creditsAnomaly).toBeUndefined();
    expect(call.creditsMax).toBeUndefined();
    expect(budgetCredits(call)).toBe(1e15);
  });
});
