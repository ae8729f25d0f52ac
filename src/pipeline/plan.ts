/**
 * The plan of a pipeline: pure and deterministic (no fs, clock or randomness). Expands every
 * matrix, applies defaults (the pipeline's, then the contract's documented ones), keys each
 * request by the hash of its canonical JSON, keeps the first of identical requests, and
 * estimates credits.
 */
import type { CreditEstimate, NormalisedSearchRequest, SearchRequest } from '../contract/index.ts';
import { withSearchDefaults } from '../contract/index.ts';
import { estimateFromTotals, estimateTaskCredits, type PlanEstimate } from './estimate.ts';
import { expandSearches } from './expand.ts';
import { taskKey } from './keys.ts';
import type { Pipeline } from './schema.ts';

/** One search to run. */
export interface Task {
  /** 16 hex characters of sha256 over the canonical normalised request; stable everywhere. */
  key: string;
  /** The request with every default applied, as sent to the API. */
  request: NormalisedSearchRequest;
  /** `id` of the search item that produced it. */
  searchId?: string;
  /** `tags` of the search item that produced it. */
  tags?: string[];
  /** Matrix values of this combination, when the item has a matrix. */
  vars?: Record<string, unknown>;
  /** Credit bounds of this task. */
  credits: CreditEstimate;
}

export interface Plan {
  /** The pipeline's name. */
  pipeline: string;
  /** Distinct tasks in file order (first occurrence wins). */
  tasks: Task[];
  /** Expanded searches dropped because an earlier one had the same request. */
  duplicates: number;
  estimate: PlanEstimate;
}

/**
 * The tasks of a pipeline, produced one at a time in plan order, so a large plan can be
 * written out without being held in memory. Read it once; the counts and the estimate grow
 * as it is read and are the plan's once it has been read to the end.
 */
export interface TaskStream extends Iterable<Task> {
  /** The pipeline's name. */
  readonly pipeline: string;
  /** Distinct tasks yielded so far. */
  readonly taskCount: number;
  /** Expanded searches dropped so far because an earlier one had the same request. */
  readonly duplicates: number;
  /** Whether every task has been yielded. */
  readonly done: boolean;
  /** Credit estimate of the tasks yielded so far. */
  estimate(): PlanEstimate;
}

/**
 * Plan a pipeline that came from `parsePipeline`/`loadPipelineFile` (validated: each expanded
 * search already passed the contract's SearchRequestSchema).
 */
export function plan(pipeline: Pipeline): Plan {
  const stream = planTasks(pipeline);
  const tasks = [...stream];
  return {
    pipeline: stream.pipeline,
    tasks,
    duplicates: stream.duplicates,
    estimate: stream.estimate(),
  };
}

/**
 * `plan` as a stream: yields the tasks `plan` would list, in the same order. Memory held is
 * the pipeline and one key (16 characters) per distinct task, to drop duplicates.
 */
export function planTasks(pipeline: Pipeline): TaskStream {
  let taskCount = 0;
  let duplicates = 0;
  let minCredits = 0;
  let maxCredits = 0;
  let done = false;
  let started = false;

  function* tasks(): Generator<Task> {
    const normaliseOptions = createRequestNormaliser();
    const keys = new Set<string>();
    const defaults = pipeline.defaults as Record<string, unknown> | undefined;
    for (let index = 0; index < pipeline.searches.length; index++) {
      const item = pipeline.searches[index]!;
      for (const search of expandSearches(defaults, item as Record<string, unknown>, index)) {
        const validated = search.request as SearchRequest;
        const request = normaliseOptions(validated);
        const key = taskKey(request);
        if (keys.has(key)) {
          duplicates += 1;
          continue;
        }
        keys.add(key);
        const task: Task = { key, request, credits: estimateTaskCredits(validated) };
        if (item.id !== undefined) task.searchId = item.id;
        if (item.tags !== undefined) task.tags = [...item.tags];
        if (search.vars !== undefined) task.vars = { ...search.vars };
        taskCount += 1;
        minCredits += task.credits.min;
        maxCredits += task.credits.max;
        yield task;
      }
    }
    done = true;
  }

  return {
    pipeline: pipeline.name,
    get taskCount() {
      return taskCount;
    },
    get duplicates() {
      return duplicates;
    },
    get done() {
      return done;
    },
    estimate: () =>
      estimateFromTotals(taskCount, minCredits, maxCredits, pipeline.budget?.maxCredits),
    [Symbol.iterator]() {
      if (started) throw new Error('a task stream is read once');
      started = true;
      return tasks();
    },
  };
}

/**
 * `withSearchDefaults`, with the normalised scrapeOptions computed once per scrapeOptions
 * object and shared (deep-frozen) between tasks: a matrix item's searches share theirs.
 */
export function createRequestNormaliser(): (request: SearchRequest) => NormalisedSearchRequest {
  const cache = new WeakMap<object, NonNullable<NormalisedSearchRequest['scrapeOptions']>>();
  return (request) => {
    const { scrapeOptions, ...rest } = request;
    const normalised = withSearchDefaults(rest);
    if (scrapeOptions === undefined) return normalised;
    let options = cache.get(scrapeOptions);
    if (options === undefined) {
      options = deepFreeze(withSearchDefaults({ query: rest.query, scrapeOptions }).scrapeOptions!);
      cache.set(scrapeOptions, options);
    }
    normalised.scrapeOptions = options;
    return normalised;
  };
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
