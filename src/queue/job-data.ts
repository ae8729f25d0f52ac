/**
 * The typed job registry: each queue's payload schema. Payloads are validated when they are
 * enqueued and again when a worker takes them, so a malformed job fails loudly, once.
 */
import { z } from 'zod';
import { SearchRequestSchema } from '../contract/index.ts';

export const SearchJobDataSchema = z.object({
  runId: z.string().min(1),
  taskKey: z.string().min(1),
  /** The fully normalised request, as planned; workers need nothing else to call the API. */
  request: SearchRequestSchema,
  /** Attempts before the task is failed (429 answers spend none). */
  maxAttempts: z.number().int().min(1),
  /** The run's budget, if any; checked before every call against the shared Redis counter. */
  maxCredits: z.number().int().min(0).optional(),
  /** Upper bound of this task's cost, reserved from the budget while the call is in flight. */
  estimateMaxCredits: z.number().int().min(0),
  /** The run's own `run.rateLimitPerMinute`, if any: paces this run's calls, no other's. */
  rateLimitPerMinute: z.number().int().min(1).optional(),
});
export type SearchJobData = z.infer<typeof SearchJobDataSchema>;

/**
 * What a worker checks when it takes a job: the envelope in full, the request only in shape.
 * The request was validated against the contract when the run was planned; a second deep
 * parse per call would cost more than the call's own bookkeeping.
 */
export const SearchJobEnvelopeSchema = SearchJobDataSchema.extend({
  request: z.looseObject({ query: z.string() }),
});

/**
 * A `tick` job of the `runs` queue, made by a pipeline's job scheduler (`harvest schedule
 * apply`): the pipeline travels in it, so any worker with the `runs` role can start the run.
 */
export const TickJobDataSchema = z.object({
  pipelineName: z.string().min(1),
  /** The pipeline file's text when the schedule was applied; the run is planned from it. */
  yamlText: z.string().min(1),
  /** sha256 of `yamlText`, hex (the hash of the run's pipelines row). */
  pipelineHash: z.string().regex(/^[0-9a-f]{64}$/),
  /** The file it was applied from, for people. */
  file: z.string().optional(),
  /**
   * When the tick was due, ms since the epoch: only on a missed tick that `schedule apply`
   * queued again (a scheduler's own ticks carry it as BullMQ's `prevMillis`).
   */
  dueAt: z.number().int().nonnegative().optional(),
});
export type TickJobData = z.infer<typeof TickJobDataSchema>;

/** A `notify` job of the `runs` queue: deliver the webhook of a finished scheduled run. */
export const NotifyJobDataSchema = z.object({ runId: z.string().min(1) });
export type NotifyJobData = z.infer<typeof NotifyJobDataSchema>;
