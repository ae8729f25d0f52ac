/**
 * What a task's search records with its call (call.ts): the results of an answer, and the
 * task's status after the call, as the store takes them (src/events/store.ts).
 */
import type { Decision } from '../../src/api/backoff.ts';
import type { ApiResponse } from '../../src/api/index.ts';
import type { SearchResponse } from '../../src/contract/index.ts';
import type { CallEvent, ResultItem, StoreEvent, TaskEvent } from '../../src/events/store.ts';
import type { CallRecords } from './call.ts';

/** What a search records with its call: its results and its task's status. */
export const SEARCH_RECORDS: CallRecords = {
  answered: (call, response, receivedAt) => [
    call,
    resultsEvent(call, response, receivedAt),
    taskEvent(call, call.attempt, 'done'),
  ],
  failed: (call, decision) => [call, ...afterFailure(call, decision)],
};

/** The task's status after its call failed; none while it waits out a rate limit. */
function afterFailure(call: CallEvent, decision: Decision): TaskEvent[] {
  const errorCode = call.outcome;
  switch (decision.kind) {
    case 'retry':
      return [
        taskEvent(call, call.attempt, 'retrying', {
          errorCode,
          errorMessage: call.errorMessage ?? null,
        }),
      ];
    // The job goes back to the (now paused) queue, attempt unspent, and runs after resume.
    case 'pause':
      return [
        taskEvent(call, call.attempt, 'queued', { errorCode, errorMessage: decision.reason }),
      ];
    case 'fail':
      return [
        taskEvent(call, call.attempt, 'failed', {
          errorCode: decision.code,
          errorMessage: decision.message,
        }),
      ];
    case 'rate-limit':
      return [];
  }
}

/** A status of the task `task` (its run id and key), at its attempt `attempts`. */
export function taskEvent(
  task: { runId: string; taskKey: string },
  attempts: number,
  status: TaskEvent['status'],
  extra: Partial<TaskEvent> = {},
): TaskEvent {
  return {
    type: 'task',
    runId: task.runId,
    taskKey: task.taskKey,
    status,
    attempts,
    at: Date.now(),
    ...extra,
  };
}

function resultsEvent(
  call: CallEvent,
  response: ApiResponse<SearchResponse>,
  receivedAt: number,
): StoreEvent {
  return {
    type: 'results',
    runId: call.runId,
    taskKey: call.taskKey,
    callId: call.callId,
    searchId: response.body.id,
    fetchedAt: receivedAt,
    items: resultItems(response.body.data),
  };
}

const SOURCES = ['web', 'news', 'images'] as const;

function resultItems(data: Record<string, unknown>): ResultItem[] {
  const items: ResultItem[] = [];
  for (const source of SOURCES) {
    const list = data[source];
    if (!Array.isArray(list)) continue;
    list.forEach((item, position) => {
      items.push({ source, position, item: item as Record<string, unknown> });
    });
  }
  return items;
}
