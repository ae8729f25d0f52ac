/**
 * Planning 100,000 tasks (one matrix item: 100 topics x 50 countries x 20 limits).
 * Run: npx tsx test/bench/plan.bench.ts
 * Prints the wall time of each step, with its ratio to a baseline measured in the same run
 * (canonical JSON + sha256 of 100,000 plain objects of similar size), and memory:
 * - validate: parse and check every expanded search;
 * - planTasks: the plan as a stream, each task dropped once counted (what `harvest run` does:
 *   tasks go to SQLite as they come). Heap held is measured after a full GC at 25, 50, 75 and
 *   100% of the stream: it grows only by the key kept per distinct task, to drop duplicates;
 * - plan(): the whole task list in memory (what `harvest plan` does), for comparison.
 * Targets: plan() under 3 s; peak RSS under 300 MB; the stream holds under 150 bytes per task.
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parsePipeline, plan, planTasks } from '../../src/pipeline/index.ts';

const TOPICS = 100;
const COUNTRIES = 50;
const LIMITS = 20;
const TASKS = TOPICS * COUNTRIES * LIMITS;

const list = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i));
const yaml = [
  'name: bench',
  'defaults:',
  '  scrapeOptions:',
  '    formats: [markdown]',
  'searches:',
  '  - query: "{topic} news"',
  '    matrix:',
  `      topic: [${list(TOPICS, (i) => `topic-${i}`).join(', ')}]`,
  `      country: [${list(COUNTRIES, (i) => `C${i}`).join(', ')}]`,
  `      limit: [${list(LIMITS, (i) => String(i + 1)).join(', ')}]`,
  'budget:',
  '  maxCredits: 100000',
].join('\n');

// A full GC before each memory reading; benchmarks run without --expose-gc.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heldBytes = () => {
  gc();
  return process.memoryUsage().heapUsed;
};

let peakRss = 0;
const sampleRss = () => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
};

function time<T>(fn: () => T): { ms: number; value: T } {
  const start = performance.now();
  const value = fn();
  const ms = performance.now() - start;
  sampleRss();
  return { ms, value };
}

function baseline(): number {
  let acc = 0;
  for (let i = 0; i < TASKS; i++) {
    const object = {
      query: `topic-${i % TOPICS} news`,
      limit: (i % LIMITS) + 1,
      country: `C${i % COUNTRIES}`,
      sources: [{ type: 'web' }],
      categories: [],
      timeout: 60000,
      ignoreInvalidURLs: false,
      highlights: true,
      scrapeOptions: { formats: [{ type: 'markdown' }], onlyMainContent: true, timeout: 60000 },
    };
    const hex = createHash('sha256').update(JSON.stringify(object)).digest('hex');
    acc += hex.charCodeAt(0);
  }
  return acc;
}

const base = time(baseline);

const beforeValidate = heldBytes();
const validated = time(() => parsePipeline(yaml, 'bench.yaml'));
if (!validated.value.ok) throw new Error(JSON.stringify(validated.value.issues.slice(0, 3)));
const pipeline = validated.value.value;
const afterValidate = heldBytes();

// Streamed: heap held at quarters of the stream (timed separately, without the GCs).
const beforeStream = heldBytes();
const held: number[] = [];
{
  let count = 0;
  for (const _task of planTasks(pipeline)) {
    count += 1;
    if (count % (TASKS / 4) === 0) held.push(heldBytes() - beforeStream);
  }
}
const streamed = time(() => {
  const stream = planTasks(pipeline);
  let count = 0;
  for (const _task of stream) count += 1;
  return { count, estimate: stream.estimate() };
});

const beforePlan = heldBytes();
const planned = time(() => plan(pipeline));
const planHeld = heldBytes() - beforePlan;

if (planned.value.tasks.length !== TASKS)
  throw new Error(`expected ${TASKS} tasks, got ${planned.value.tasks.length}`);
if (streamed.value.count !== TASKS)
  throw new Error(`expected ${TASKS} streamed tasks, got ${streamed.value.count}`);
if (JSON.stringify(streamed.value.estimate) !== JSON.stringify(planned.value.estimate))
  throw new Error('planTasks and plan() disagree on the estimate');

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const ratio = (ms: number) => `${(ms / base.ms).toFixed(2)}x baseline`;
const perTask = (bytes: number, tasks: number) => `${(bytes / tasks).toFixed(0)} B/task`;
console.log(`tasks:                 ${planned.value.tasks.length}`);
console.log(`baseline (hash ${TASKS} JSON objects): ${base.ms.toFixed(0)} ms`);
console.log(
  `validate (parse+check):${validated.ms.toFixed(0)} ms  (${ratio(validated.ms)}); holds ${mb(afterValidate - beforeValidate)} after`,
);
console.log(`planTasks (streamed):  ${streamed.ms.toFixed(0)} ms  (${ratio(streamed.ms)})`);
console.log(
  `  heap held at 25/50/75/100%: ${held.map(mb).join(' / ')}  (${perTask(held.at(-1)!, TASKS)}; target < 150 B/task)`,
);
console.log(
  `plan() (all tasks):    ${planned.ms.toFixed(0)} ms  (${ratio(planned.ms)}; target < 3000 ms); holds ${mb(planHeld)} (${perTask(planHeld, TASKS)})`,
);
console.log(`peak RSS:              ${mb(peakRss)} (target < 300 MB)`);
console.log(
  `estimate:              ${planned.value.estimate.minCredits}..${planned.value.estimate.maxCredits} credits, ${planned.value.estimate.verdict}`,
);
