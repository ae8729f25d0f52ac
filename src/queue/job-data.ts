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
});
export type SearchJobData = z.infer<typeof SearchJobDataSchema>;

export const StoreJobDataSchema = z.object({
  /** Events of many search jobs, applied by the writer in one transaction. */
  events: z.array(z.record(z.string(), z.unknown())).min(1),
});
export type StoreJobData = z.infer<typeof StoreJobDataSchema>;
