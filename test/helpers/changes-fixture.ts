/** Runs of one pipeline written to a temp store directly, for the changes tests. */
import { randomUUID } from 'node:crypto';
import type { Store } from '../../src/store/index.ts';

/** Two searches of one matrix entry: the same query in two countries. */
export const TASKS = [
  { key: 'us', request: { query: 'solar', country: 'US', limit: 5 }, searchId: 'energy' },
  { key: 'de', request: { query: 'solar', country: 'DE', limit: 5 }, searchId: 'energy' },
];

let now = Date.UTC(2026, 0, 1);
/** The fixture's clock, a minute on at each run. */
export const clock = () => now;

/** A run whose tasks answer `answers` (by task key) or fail (`null`), then finishes. */
export function runWith(store: Store, runId: string, answers: Record<string, string[][] | null>) {
  const pipelineId = store.pipelines.upsert({
    name: 'watch',
    hash: 'h',
    yamlText: 'name: watch\n',
  });
  store.runs.create({ id: runId, pipelineId, trigger: 'schedule', taskCount: TASKS.length });
  store.tasks.insertMany(runId, TASKS);
  store.runs.setStatus(runId, 'running');
  now += 60_000;
  for (const { key } of TASKS) {
    const answer = answers[key];
    const events: unknown[] = [];
    if (answer) {
      const items = answer.map(([url, markdown]) => ({
        url: `https://x.test/${url}`,
        title: url,
        markdown,
      }));
      events.push({
        type: 'results',
        runId,
        taskKey: key,
        callId: randomUUID(),
        searchId: 'search-1',
        fetchedAt: now,
        items: items.map((item, position) => ({ source: 'web', position, item })),
      });
    }
    const status = answer ? 'done' : 'failed';
    events.push({ type: 'task', runId, taskKey: key, status, attempts: 1, at: now });
    store.applyEvents(events);
  }
}
