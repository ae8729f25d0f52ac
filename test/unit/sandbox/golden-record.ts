/**
 * Records the sandbox's golden answers into test/fixtures/sandbox-golden.json. Run only when
 * an answer is meant to change: `npx tsx test/unit/sandbox/golden-record.ts`.
 */
import { writeFileSync } from 'node:fs';
import { GOLDEN_FILE, type GoldenRecord, runScenario, SCENARIOS } from './golden-cases.ts';

const records: GoldenRecord[] = [];
for (const scenario of SCENARIOS) records.push(await runScenario(scenario));
writeFileSync(GOLDEN_FILE, `${JSON.stringify(records, null, 1)}\n`);
console.log(
  `recorded ${records.reduce((n, r) => n + r.answers.length, 0)} answers in ${records.length} scenarios`,
);
