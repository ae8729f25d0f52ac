/**
 * Calls to an export thread (page-readers.ts, parquet-thread.ts): the main thread posts each
 * call with an id, the thread answers it with the result or why it failed. Once a call fails,
 * or the thread stops with calls unanswered, every call under way and every later one rejects:
 * an export that lost a part cannot go on.
 */
import type { MessagePort, Worker } from 'node:worker_threads';

/** What the thread answers to a call: its result, or why it failed. */
type Answer<T> = { id: number; ok: true; value: T } | { id: number; ok: false; message: string };
interface Call<T> {
  id: number;
  message: T;
}

/**
 * Asks the thread to stop: it answers CLOSED once the calls posted before have returned, and
 * only then is it terminated. Terminated inside a call, a thread reading SQLite has
 * better-sqlite3 throw into an isolate that is stopping, which kills the whole process.
 */
const CLOSE = { close: true } as const;
const CLOSED = { closed: true } as const;
/** Longest wait for a thread to answer CLOSE (one call under way), in ms. */
const CLOSE_GRACE_MS = 30_000;

export interface ThreadCalls<In, Out> {
  /** Posts `message` (moving `transfer`); resolves with the thread's answer. */
  call(message: In, transfer?: ArrayBuffer[]): Promise<Out>;
  /** Stops the thread; calls not yet answered reject. */
  close(): Promise<void>;
}

/** The main thread's side: calls to `worker`, which `what` names in errors. */
export function threadCalls<In, Out>(worker: Worker, what: string): ThreadCalls<In, Out> {
  const pending = new Map<number, { resolve: (value: Out) => void; reject: (e: Error) => void }>();
  let nextId = 0;
  let failure: Error | undefined;
  let exited = false;
  let closed: () => void = () => {};
  const closing = new Promise<void>((resolve) => {
    closed = resolve;
  });
  const fail = (error: Error) => {
    failure ??= error;
    for (const p of pending.values()) p.reject(failure);
    pending.clear();
  };
  worker.on('message', (answer: Answer<Out> | typeof CLOSED) => {
    if ('closed' in answer) {
      closed();
      return;
    }
    const p = pending.get(answer.id);
    if (!p) return;
    pending.delete(answer.id);
    if (answer.ok) {
      p.resolve(answer.value);
      return;
    }
    const error = new Error(answer.message);
    p.reject(error);
    fail(error);
  });
  worker.on('error', (error: Error & { code?: string }) =>
    fail(
      error.code === 'ERR_WORKER_OUT_OF_MEMORY'
        ? new Error(`${what} ran out of memory (${error.message})`, { cause: error })
        : error,
    ),
  );
  worker.on('exit', (code) => {
    exited = true;
    closed();
    if (pending.size > 0) fail(new Error(`${what} stopped (exit code ${code})`));
  });
  return {
    call(message, transfer = []) {
      if (failure) return Promise.reject(failure);
      const id = nextId++;
      return new Promise<Out>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        worker.postMessage({ id, message } satisfies Call<In>, transfer);
      });
    },
    async close() {
      fail(new Error(`${what} was closed`));
      if (exited) return;
      worker.postMessage(CLOSE);
      let timer: NodeJS.Timeout | undefined;
      // A thread that does not answer (stuck in a call) is terminated all the same.
      await Promise.race([closing, new Promise((r) => (timer = setTimeout(r, CLOSE_GRACE_MS)))]);
      clearTimeout(timer);
      await worker.terminate();
    },
  };
}

/** The thread's side: answers each call on `port` with what `handle` returns, or its error. */
export function answerCalls<In, Out>(
  port: MessagePort,
  handle: (message: In) => { value: Out; transfer?: ArrayBuffer[] },
): void {
  port.on('message', (call: Call<In> | typeof CLOSE) => {
    if ('close' in call) {
      // Idle now, between two calls: safe to terminate.
      port.postMessage(CLOSED);
      return;
    }
    const { id, message } = call;
    let answer: Answer<Out>;
    let transfer: ArrayBuffer[] = [];
    try {
      const result = handle(message);
      answer = { id, ok: true, value: result.value };
      transfer = result.transfer ?? [];
    } catch (error) {
      answer = { id, ok: false, message: error instanceof Error ? error.message : String(error) };
    }
    port.postMessage(answer, transfer);
  });
}
