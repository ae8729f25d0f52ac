/**
 * For tests only: a worker that kills itself (SIGKILL, as a power loss or the OOM killer would)
 * at one step of an API call's life, so a test can check that every request that reached the
 * service is accounted for whatever step a worker dies at. Armed by `HARVEST_TEST_KILL_AT`
 * (read once with the settings); unset, every `killPoint` does nothing.
 *
 * | step                 | where (jobs/search/call.ts)                                          |
 * |----------------------|----------------------------------------------------------------------|
 * | `claimed`            | the rate-limit turn and the budget reservation taken                 |
 * | `journaled`          | the journal entry written, the request not yet sent                  |
 * | `request-written`    | the request's body handed to the socket (undici's `bodySent`)        |
 * | `answer-read`        | the answer (or the failure) in hand, no record made                  |
 * | `record-handed-over` | the record durable (committed, or in the store queue), still journaled |
 * | `journal-cleared`    | the call off the journal and its budget settled                      |
 */
import { channel } from 'node:diagnostics_channel';
import type { KillPoint } from '../../src/config.ts';

let armed: KillPoint | undefined;

/** Arms the kill at `point` for this process (undefined: none). */
export function armKillPoint(point: KillPoint | undefined): void {
  if (point === armed) return;
  armed = point;
  if (point === 'request-written') {
    channel('undici:request:bodySent').subscribe((message) => {
      const request = (message as { request?: { method?: string; path?: string } }).request;
      if (request?.method === 'POST' && request.path?.endsWith('/search')) killNow();
    });
  }
}

/** Kills this process if the kill is armed at `point`. */
export function killPoint(point: KillPoint): void {
  if (armed === point) killNow();
}

function killNow(): void {
  process.kill(process.pid, 'SIGKILL');
}
