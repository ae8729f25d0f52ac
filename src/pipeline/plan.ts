/**
 * The plan of a pipeline: pure and deterministic (no fs, clock or randomness). Expands every
 * matrix, applies defaults (the pipeline's, then the contract's documented ones), keys each
 * request by the hash of its canonical JSON, keeps the first of identical requests, and
 * estimates credits.
 */
import type { CreditEstimate, NormalisedSearchRequest, SearchRequest } from '../contract/index.ts';
import { withSearchDefaults } from '../contract/index.ts';
import { taskKey } from './canonical.ts';
import { estimateTaskCredits, type PlanEstimate, summariseEstimate } from './estimate.ts';
import { expandItem } from './expand.ts';
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
 * Plan a pipeline that came from `parsePipeline`/`loadPipelineFile` (validated: each expanded
 * search already passed the contract's SearchRequestSchema).
 */
export function plan(pipeline: Pipeline): Plan {
  const normaliseOptions = createRequestNormaliser();
  const tasks: Task[] = [];
  const keys = new Set<string>();
  let duplicates = 0;
  const defaults = pipeline.defaults as Record<string, unknown> | undefined;
  pipeline.searches.forEach((item, index) => {
    expandItem(defaults, item as Record<string, unknown>, index, (search) => {
      const validated = search.request as SearchRequest;
      const request = normaliseOptions(validated);
      const key = taskKey(request);
      if (keys.has(key)) {
        duplicates += 1;
        return;
      }
      keys.add(key);
      const task: Task = { key, request, credits: estimateTaskCredits(validated) };
      if (item.id !== undefined) task.searchId = item.id;
      if (item.tags !== undefined) task.tags = [...item.tags];
      if (search.vars !== undefined) task.vars = { ...search.vars };
      tasks.push(task);
    });
  });
  return {
    pipeline: pipeline.name,
    tasks,
    duplicates,
    estimate: summariseEstimate(
      tasks.map((task) => task.credits),
      pipeline.budget?.maxCredits,
    ),
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
