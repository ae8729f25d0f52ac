/**
 * A week of runs of three pipelines, with the calls and results a real deployment records:
 * rate limits and timeouts retried, a LOST call (cost unknown), media re-issues. Deterministic,
 * for the HTML cost report test and the screenshot in docs/.
 */
import { randomUUID } from 'node:crypto';
import type { StoreEvent } from '../../src/events/store.ts';
import type { Store } from '../../src/store/index.ts';

const DAY_MS = 86_400_000;
export const FIXTURE_START = Date.UTC(2026, 10, 16, 6);

const PIPELINES = [
  { name: 'news-watch', tasks: 12, credits: 2, results: 10, budget: 60 },
  { name: 'bulk-dataset', tasks: 8, credits: 12, results: 10, budget: 150 },
  { name: 'weekly-research', tasks: 5, credits: 7, results: 4, budget: null },
] as const;

/** `setNow` moves the store's clock (open it with `now: () => t`), so runs get their day. */
export function seedCostFixture(
  store: Store,
  setNow: (ms: number) => void,
  days = 7,
): { runIds: string[] } {
  const runIds: string[] = [];
  let n = 0;
  for (let day = 0; day < days; day++) {
    for (const [p, spec] of PIPELINES.entries()) {
      if (spec.name === 'weekly-research' && day % 3 !== 0) continue;
      const at = FIXTURE_START + day * DAY_MS + p * 3_600_000;
      const runId = `2026111${6 + day}T0${6 + p}0000-${spec.name.slice(0, 4)}`;
      runIds.push(runId);
      setNow(at);
      const pipelineId = store.pipelines.upsert({
        name: spec.name,
        hash: 'fixture',
        yamlText: `name: ${spec.name}\n`,
      });
      store.runs.create({
        id: runId,
        pipelineId,
        trigger: 'schedule',
        maxCredits: spec.budget,
        taskCount: spec.tasks,
      });
      store.runEstimates.set(runId, {
        minCredits: 0,
        maxCredits: spec.tasks * spec.credits * 2,
        tasks: spec.tasks,
      });
      const keys = Array.from({ length: spec.tasks }, (_, i) => `${spec.name}-${i}`);
      store.tasks.insertMany(
        runId,
        keys.map((key) => ({ key, request: { query: key, limit: spec.results } })),
      );
      const events: StoreEvent[] = [];
      for (const [i, taskKey] of keys.entries()) {
        n++;
        const startedAt = at + i * 1000;
        const base = { type: 'call' as const, runId, taskKey, durationMs: 300, searchId: null };
        if (n % 7 === 0) {
          events.push({
            ...base,
            callId: randomUUID(),
            attempt: 1,
            startedAt,
            status: 429,
            outcome: 'RATE_LIMITED',
            creditsUsed: 0,
          });
        }
        if (n % 11 === 0) {
          events.push({
            ...base,
            callId: randomUUID(),
            attempt: 1,
            startedAt: startedAt + 1,
            status: 408,
            outcome: 'TIMEOUT',
            creditsUsed: 0,
          });
        }
        if (n % 29 === 0) {
          events.push({
            ...base,
            callId: randomUUID(),
            attempt: 1,
            startedAt: startedAt + 2,
            status: null,
            outcome: 'LOST',
            creditsUsed: null,
          });
        }
        const callId = randomUUID();
        const credits = spec.credits + (n % 3);
        events.push({
          ...base,
          callId,
          attempt: 2,
          startedAt: startedAt + 3,
          status: 200,
          outcome: 'ok',
          creditsUsed: credits,
        });
        events.push({
          type: 'results',
          runId,
          taskKey,
          callId,
          searchId: null,
          fetchedAt: startedAt + 4,
          items: Array.from({ length: spec.results - (n % 4) }, (_, position) => ({
            source: 'web' as const,
            position,
            item: {
              url: `https://${spec.name}.example/${taskKey}/${day}/${position}`,
              title: `r${position}`,
            },
          })),
        });
        if (n % 13 === 0) {
          events.push({
            ...base,
            callId: randomUUID(),
            attempt: 1,
            startedAt: startedAt + 5,
            status: 200,
            outcome: 'ok',
            creditsUsed: credits,
            purpose: 'media-reissue',
          });
        }
        events.push({
          type: 'task',
          runId,
          taskKey,
          status: 'done',
          attempts: 2,
          at: startedAt + 6,
        });
      }
      store.applyEvents(events);
      store.runs.finishIfDone(runId);
    }
  }
  return { runIds };
}
