/**
 * Store throughput: applyEvents in batches of 1 (the baseline) vs 100, and insertMany of
 * 100,000 tasks; then the cost of the durability harvest runs with (synchronous = FULL, the
 * default) against NORMAL, in batches of 100 (the size of a busy group commit) and of 8. Each searched task is 4 events: task running, call, results (10 web items
 * of about 1 KB each), task done. Run with `npx tsx test/bench/store.bench.ts`.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { openStore, type StoreEvent, StoreEventSchema } from '../../src/store/index.ts';

const TASKS_PER_CASE = 5_000;
const ITEMS_PER_RESULT = 10;

function eventsFor(runId: string, taskKey: string, at: number): StoreEvent[] {
  const items = Array.from({ length: ITEMS_PER_RESULT }, (_, position) => ({
    source: 'web' as const,
    position,
    item: {
      url: `https://example.com/${taskKey}/${position}`,
      title: `Result ${position} for ${taskKey}`,
      description: 'x'.repeat(900),
    },
  }));
  return [
    { type: 'task', runId, taskKey, status: 'running', attempts: 1, at },
    {
      type: 'call',
      callId: randomUUID(),
      runId,
      taskKey,
      attempt: 1,
      startedAt: at,
      durationMs: 180,
      status: 200,
      outcome: 'ok',
      searchId: randomUUID(),
      creditsUsed: 2,
    },
    {
      type: 'results',
      runId,
      taskKey,
      callId: randomUUID(),
      searchId: 's',
      fetchedAt: at + 1,
      items,
    },
    { type: 'task', runId, taskKey, status: 'done', attempts: 1, at: at + 2 },
  ];
}

function withStore<T>(
  fn: (store: ReturnType<typeof openStore>) => T,
  synchronous: 'full' | 'normal' = 'full',
): T {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'harvest-bench-'));
  const store = openStore(path.join(dir, 'bench.db'), { synchronous });
  try {
    return fn(store);
  } finally {
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Events per second applying `mix` events per task, `batchSize` events per call. */
function applyRate(
  batchSize: number,
  mix: 'full' | 'small' = 'full',
  synchronous: 'full' | 'normal' = 'full',
): number {
  return withStore((store) => {
    const pipelineId = store.pipelines.upsert({ name: 'bench', hash: 'h', yamlText: '' });
    const runId = `run-${batchSize}`;
    store.runs.create({ id: runId, pipelineId, trigger: 'manual', taskCount: TASKS_PER_CASE });
    const keys = Array.from({ length: TASKS_PER_CASE }, (_, i) => `t${i}`);
    store.tasks.insertMany(
      runId,
      keys.map((key) => ({ key, request: { query: key } })),
    );
    const now = Date.now();
    const events = keys
      .flatMap((key) => eventsFor(runId, key, now))
      .filter((e) => mix === 'full' || e.type !== 'results');
    const started = performance.now();
    for (let i = 0; i < events.length; i += batchSize) {
      store.applyEvents(events.slice(i, i + batchSize));
    }
    const seconds = (performance.now() - started) / 1000;
    const counts = store.tasks.counts(runId);
    if (counts.done !== TASKS_PER_CASE) throw new Error(`expected all done, got ${counts.done}`);
    return events.length / seconds;
  }, synchronous);
}

function validateRate(): number {
  const events = Array.from({ length: 2_000 }, (_, i) => eventsFor('r', `t${i}`, 1)).flat();
  const started = performance.now();
  for (const e of events) StoreEventSchema.parse(e);
  return events.length / ((performance.now() - started) / 1000);
}

function insertManySeconds(): number {
  return withStore((store) => {
    const pipelineId = store.pipelines.upsert({ name: 'bench', hash: 'h', yamlText: '' });
    store.runs.create({ id: 'big', pipelineId, trigger: 'manual', taskCount: 100_000 });
    const tasks = Array.from({ length: 100_000 }, (_, i) => ({
      key: `k${i}`,
      request: { query: `query number ${i}`, limit: 10, sources: [{ type: 'web' }] },
      searchId: 'main',
    }));
    const started = performance.now();
    store.tasks.insertMany('big', tasks);
    return (performance.now() - started) / 1000;
  });
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const ratio = (n: number, base: number) => `${(n / base).toFixed(1)}x`;
applyRate(100); // warm-up
const one = applyRate(1);
const hundred = applyRate(100);
const smallOne = applyRate(1, 'small');
const smallHundred = applyRate(100, 'small');
const validate = validateRate();
const insertS = insertManySeconds();
console.log(
  `full mix (task running, call, results of ${ITEMS_PER_RESULT} items of ~1 KB, task done):`,
);
console.log(`  applyEvents, batch of 1 (baseline): ${fmt(one)} events/s`);
console.log(
  `  applyEvents, batch of 100:          ${fmt(hundred)} events/s (${ratio(hundred, one)})`,
);
console.log(`  per searched task, batch of 100:    ${fmt(hundred / 4)} tasks/s`);
console.log('small events only (calls and task changes):');
console.log(
  `  applyEvents, batch of 1:            ${fmt(smallOne)} events/s (${ratio(smallOne, one)})`,
);
console.log(
  `  applyEvents, batch of 100:          ${fmt(smallHundred)} events/s (${ratio(smallHundred, one)}; ${ratio(smallHundred, smallOne)} of batch of 1)`,
);
console.log(
  `zod validation alone, full mix:       ${fmt(validate)} events/s (${ratio(validate, one)})`,
);
console.log(
  `insertMany 100,000 tasks:             ${insertS.toFixed(2)} s (${fmt(100_000 / insertS)} tasks/s)`,
);

const durable100 = applyRate(100, 'full', 'full');
const normal100 = applyRate(100, 'full', 'normal');
const durable8 = applyRate(8, 'full', 'full');
const normal8 = applyRate(8, 'full', 'normal');
console.log('durability (full mix): synchronous = FULL (harvest) vs NORMAL');
console.log(
  `  batch of 100: FULL ${fmt(durable100 / 4)} vs NORMAL ${fmt(normal100 / 4)} tasks/s (${(durable100 / normal100).toFixed(2)} of NORMAL)`,
);
console.log(
  `  batch of 8:   FULL ${fmt(durable8 / 4)} vs NORMAL ${fmt(normal8 / 4)} tasks/s (${(durable8 / normal8).toFixed(2)} of NORMAL)`,
);
