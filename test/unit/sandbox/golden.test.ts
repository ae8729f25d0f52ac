/**
 * The sandbox answers exactly as recorded: status, headers, body and ledger of every golden
 * scenario (see golden-cases.ts). Guards optimisations of the search path against any change
 * of what it answers.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { GOLDEN_FILE, type GoldenRecord, runScenario, SCENARIOS } from './golden-cases.ts';

const recorded: GoldenRecord[] = JSON.parse(readFileSync(GOLDEN_FILE, 'utf8'));

describe('golden answers', () => {
  it('has a record for every scenario', () => {
    expect(recorded.map((r) => r.name)).toEqual(SCENARIOS.map((s) => s.name));
  });

  it.each(SCENARIOS.map((s) => [s.name, s] as const))('%s', async (name, scenario) => {
    const expected = recorded.find((r) => r.name === name);
    expect(expected).toBeDefined();
    const actual = await runScenario(scenario);
    expect(actual.answers).toHaveLength(expected!.answers.length);
    actual.answers.forEach((answer, i) => {
      expect(answer, `answer ${i}`).toEqual(expected!.answers[i]);
    });
    expect(actual.ledger).toEqual(expected!.ledger);
  });
});
