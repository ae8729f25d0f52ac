/**
 * Planning 100,000 tasks (one matrix item: 100 topics x 50 countries x 20 limits).
 * Run: npx tsx test/bench/plan.bench.ts
 * Prints wall time, peak RSS and heap, and the ratio to a baseline measured in the same run:
 * canonical JSON + sha256 of 100,000 plain objects of similar size.
 * Targets: plan under 3 s and under 300 MB.
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { parsePipeline, plan } from '../../src/pipeline/index.ts';

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

let peakRss = 0;
let peakHeap = 0;
const sample = () => {
  const usage = process.memoryUsage();
  peakRss = Math.max(peakRss, usage.rss);
  peakHeap = Math.max(peakHeap, usage.heapUsed);
};
const sampler = setInterval(sample, 5);

function time<T>(fn: () => T): { ms: number; value: T } {
  const start = performance.now();
  const value = fn();
  sample();
  return { ms: performance.now() - start, value };
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

const validated = time(() => parsePipeline(yaml, 'bench.yaml'));
if (!validated.value.ok) throw new Error(JSON.stringify(validated.value.issues.slice(0, 3)));
const pipeline = validated.value.value;
const base = time(baseline);
const planned = time(() => plan(pipeline));
clearInterval(sampler);
sample();

if (planned.value.tasks.length !== TASKS)
  throw new Error(`expected ${TASKS} tasks, got ${planned.value.tasks.length}`);
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
console.log(`tasks:                 ${planned.value.tasks.length}`);
console.log(`baseline (hash ${TASKS} JSON objects): ${base.ms.toFixed(0)} ms`);
console.log(
  `plan:                  ${planned.ms.toFixed(0)} ms  (${(planned.ms / base.ms).toFixed(2)}x baseline; target < 3000 ms)`,
);
console.log(
  `validate (parse+check):${validated.ms.toFixed(0)} ms  (${(validated.ms / base.ms).toFixed(2)}x baseline)`,
);
console.log(`peak RSS:              ${mb(peakRss)} (target < 300 MB)`);
console.log(`peak heap used:        ${mb(peakHeap)}`);
console.log(
  `estimate:              ${planned.value.estimate.minCredits}..${planned.value.estimate.maxCredits} credits, ${planned.value.estimate.verdict}`,
);
