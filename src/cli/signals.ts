/**
 * Ctrl-C and SIGTERM in two stages: the first asks for a graceful stop (calls in flight finish
 * and are recorded), the second forces it, and so does the grace period's end when one is set
 * (a stop that waits on a slow peer ends anyway). The terminal is always given back as it was (a
 * progress bar hides the cursor and may turn off line wrap).
 */
import { EXIT } from './exit-codes.ts';

/** Shows the cursor and turns line wrap back on, when stderr is a terminal. */
export function restoreTerminal(stream: NodeJS.WriteStream = process.stderr): void {
  if (stream.isTTY) stream.write('\u001b[?25h\u001b[?7h');
}

export interface TwoStageHandlers {
  /** The first signal: stop gracefully. */
  first(signal: NodeJS.Signals): void | Promise<void>;
  /** The second signal: stop now; must end the process. */
  second(signal: NodeJS.Signals): void | Promise<void>;
}

/**
 * Installs the handlers on SIGINT and SIGTERM; returns their removal. With `graceMs`, the second
 * stage also runs that long after the first signal, unless the process has ended or the
 * handlers were removed by then.
 */
export function onStopSignals(handlers: TwoStageHandlers, graceMs?: number): () => void {
  let stage = 0;
  let grace: NodeJS.Timeout | undefined;
  const forced = (signal: NodeJS.Signals) => {
    stage = 2;
    clearTimeout(grace);
    void Promise.resolve(handlers.second(signal));
  };
  const handler = (signal: NodeJS.Signals) => {
    if (stage > 0) return forced(signal);
    stage = 1;
    if (graceMs !== undefined) {
      // Unref'd: a stop that finishes in time ends the process without waiting for it.
      grace = setTimeout(() => stage < 2 && forced(signal), graceMs);
      grace.unref();
    }
    void Promise.resolve(handlers.first(signal));
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return () => {
    clearTimeout(grace);
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}

/**
 * For a command that serves until stopped (`sandbox`, `dashboard`): installs the handlers, then
 * calls `start`, which starts serving, says where, and returns how to close. Resolves once SIGINT
 * or SIGTERM has come and that close has finished (exit 0); a second signal exits at once (4, a
 * forced stop). The handlers come first: a signal sent as soon as the address is out, or while
 * starting, stops the server gracefully rather than kill it by the signal's default action.
 */
export async function serveUntilStopped(start: () => Promise<() => Promise<void>>): Promise<void> {
  let signalled!: () => void;
  const stopped = new Promise<void>((resolve) => {
    signalled = resolve;
  });
  const remove = onStopSignals({
    first: () => signalled(),
    second: () => process.exit(EXIT.NOT_FINISHED),
  });
  try {
    const close = await start();
    await stopped;
    await close().catch(() => {});
  } finally {
    remove();
  }
}
