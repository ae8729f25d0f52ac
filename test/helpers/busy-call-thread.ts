/**
 * A thread that answers export-thread calls (src/report/export/thread-calls.ts) by keeping its
 * thread busy for `busyMs`, as a long SQLite step does. `marks[0]` is set when a call starts,
 * `marks[1]` when it returns: a test can tell whether a call was cut short.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { answerCalls } from '../../src/report/export/thread-calls.ts';

const { busyMs, marks: shared } = workerData as { busyMs: number; marks: SharedArrayBuffer };
const marks = new Int32Array(shared);

answerCalls(parentPort!, (n: number) => {
  Atomics.store(marks, 0, 1);
  const end = Date.now() + busyMs;
  while (Date.now() < end) {
    // Busy, as inside a native call: no message is handled meanwhile.
  }
  Atomics.store(marks, 1, 1);
  return { value: n };
});
