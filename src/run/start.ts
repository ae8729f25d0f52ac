/**
 * Starting runs. A run's tasks are rows in SQLite before they are jobs in Redis, so a Redis
 * that lost everything costs a resume (resume.ts), not a run.
 */

import { HarvestError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { kindsToSave } from '../media/kinds.ts';
import { mediaRoot } from '../media/storage.ts';
import {
  formatIssue,
  MEDIA_MAX_BYTES_DEFAULT,
  type Pipeline,
  parsePipeline,
} from '../pipeline/index.ts';
import { pipelineTextHash } from '../pipeline/keys.ts';
import { readPipelineText } from '../pipeline/load.ts';
import { newRunId } from '../queue/names.ts';
import type { RunTrigger } from '../store/runs.ts';
import { enqueueRun } from './enqueue-run.ts';
import { type WrittenPlan, writePlan } from './plan-writer.ts';
import type { Runtime } from './runtime.ts';

export { DEFAULT_MAX_ATTEMPTS } from './enqueue-run.ts';

export interface StartedRun {
  runId: string;
  pipeline: Pipeline;
  /** Tasks recorded: all of the plan's, or those written before a stop. */
  taskCount: number;
  warnings: string[];
  estimate: { min: number; max: number };
  /**
   * Stopped (`signal`) while its plan was written: the run is `interrupted`, nothing of it is
   * enqueued, and `harvest run --resume` writes the rest of its plan and runs it.
   */
  interrupted: boolean;
}

export interface LoadedPipeline {
  pipeline: Pipeline;
  text: string;
  warnings: string[];
}

/** Reads and validates a pipeline file; every problem is in the error, with its position. */
export async function loadValidPipeline(file: string): Promise<LoadedPipeline> {
  const read = await readPipelineText(file);
  const result = read.ok ? parsePipeline(read.text, file) : read;
  if (!read.ok || !result.ok) {
    const issues = result.ok ? [] : result.issues;
    throw new HarvestError(
      'PIPELINE_INVALID',
      `${file} is not a valid pipeline:\n${issues.map((i) => `  ${formatIssue(i)}`).join('\n')}`,
      { exitCode: 2 },
    );
  }
  return {
    pipeline: result.value,
    text: read.text,
    warnings: result.warnings.map((w) => formatIssue(w)),
  };
}

export interface StartOptions {
  trigger?: RunTrigger;
  /** The run's id. Default a new one from `nowMs` (a scheduled tick picks its own beforehand). */
  runId?: string;
  logger: Logger;
  nowMs?: number;
  /** Called once the run's row exists, before its plan is written. */
  onPlanning?: (runId: string) => void;
  /** Called once the run and its tasks are in SQLite, before any job is enqueued. */
  onRecorded?: (runId: string) => void;
  /**
   * Stops planning (between two batches of tasks: the run is then `interrupted`) or, once the
   * plan is written, enqueuing (the run was interrupted meanwhile).
   */
  signal?: AbortSignal;
}

export async function startRun(
  runtime: Runtime,
  source: string | LoadedPipeline,
  options: StartOptions,
): Promise<StartedRun> {
  const { pipeline, text, warnings } =
    typeof source === 'string' ? await loadValidPipeline(source) : source;
  const { store } = runtime;
  const runId = options.runId ?? newRunId(options.nowMs ?? Date.now());
  // The plan lives only until its tasks are rows: jobs are enqueued from SQLite, page by page,
  // exactly as a resume does, so a large run is not held in memory twice. A run larger than
  // the queue window gets a window's worth, and the feeder (./feeder.ts) enqueues the rest.
  createRun(runtime, runId, pipeline, text, options.trigger);
  options.onPlanning?.(runId);
  const plan = await writeRunPlan(runtime, runId, pipeline, options.signal);
  const started = { runId, pipeline, warnings, taskCount: plan.taskCount, estimate: plan.estimate };
  if (!plan.complete) {
    // No job exists yet: nothing of the run is in Redis for a worker to take.
    store.runs.setStatus(runId, 'interrupted');
    options.logger.info({ runId, tasks: plan.taskCount }, 'run interrupted while planning');
    return { ...started, interrupted: true };
  }
  options.onRecorded?.(runId);
  // Running from its first job on: a local pool may finish tasks before enqueuing ends.
  store.runs.setStatus(runId, 'running');
  await enqueueRun(runtime, runId, pipeline, options.signal);
  options.logger.info({ runId, tasks: plan.taskCount }, 'run started');
  return { ...started, interrupted: false };
}

/** Writes the pipeline and the run's row (`queued`, no task yet) and what it saves of media. */
function createRun(
  runtime: Runtime,
  runId: string,
  pipeline: Pipeline,
  text: string,
  trigger: RunTrigger = 'manual',
): void {
  const { store } = runtime;
  const media = mediaSettingsOf(runtime, pipeline);
  const pipelineId = store.pipelines.upsert({
    name: pipeline.name,
    hash: pipelineTextHash(text),
    yamlText: text,
  });
  store.runs.create({
    id: runId,
    pipelineId,
    trigger,
    maxCredits: pipeline.budget?.maxCredits ?? null,
    taskCount: 0,
  });
  if (media) store.media.configure({ runId, ...media });
}

/**
 * Writes the run's tasks as the plan streams out, a batch per transaction, so memory does not
 * grow with the number of tasks (./plan-writer.ts). A plan that cannot be written fails the run.
 */
async function writeRunPlan(
  runtime: Runtime,
  runId: string,
  pipeline: Pipeline,
  signal: AbortSignal | undefined,
): Promise<WrittenPlan> {
  try {
    return await writePlan(runtime.store, runId, pipeline, signal);
  } catch (error) {
    // Its plan is unfinished (its task count 0): a resume writes the rest, once a task is.
    runtime.store.runs.setStatus(runId, 'failed');
    throw error;
  }
}

/**
 * What the run saves of its media (written with the run, before any of its results can
 * arrive); undefined when it saves none. Refuses a folder outside the data directory.
 */
function mediaSettingsOf(runtime: Runtime, pipeline: Pipeline) {
  const kinds = kindsToSave(pipeline.media);
  if (kinds.length === 0) return undefined;
  const dir = pipeline.media?.dir ?? 'media';
  mediaRoot(runtime.settings.dataDir, dir);
  return {
    kinds,
    dir,
    maxBytes: pipeline.media?.maxBytes ?? MEDIA_MAX_BYTES_DEFAULT,
    marginMaxMs: runtime.settings.media.marginMaxMs,
  };
}
