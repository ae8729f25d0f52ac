import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { onStopSignals, restoreTerminal } from '../../../src/cli/signals.ts';
import { waitFor } from '../../helpers/wait.ts';

function stream(isTTY: boolean): { s: NodeJS.WriteStream; text(): string } {
  const s = new PassThrough() as unknown as NodeJS.WriteStream;
  (s as { isTTY: boolean }).isTTY = isTTY;
  let text = '';
  (s as unknown as PassThrough).on('data', (c) => {
    text += String(c);
  });
  return { s, text: () => text };
}

describe('restoreTerminal', () => {
  it('shows the cursor and turns line wrap back on, on a terminal only', async () => {
    const tty = stream(true);
    restoreTerminal(tty.s);
    const pipe = stream(false);
    restoreTerminal(pipe.s);
    await new Promise((r) => setImmediate(r));
    expect(tty.text()).toBe('\u001b[?25h\u001b[?7h');
    expect(pipe.text()).toBe('');
  });
});

describe('onStopSignals', () => {
  /** Installs the handlers; what ran, in order; removes them afterwards. */
  async function withHandlers(
    graceMs: number | undefined,
    act: (seen: readonly string[]) => Promise<void>,
  ) {
    const seen: string[] = [];
    const remove = onStopSignals(
      { first: (s) => void seen.push(`first ${s}`), second: (s) => void seen.push(`second ${s}`) },
      graceMs,
    );
    try {
      await act(seen);
    } finally {
      remove();
    }
    return seen;
  }
  const emit = (signal: NodeJS.Signals) => process.emit(signal, signal);

  it('the second signal forces the stop', async () => {
    const seen = await withHandlers(undefined, async () => {
      emit('SIGTERM');
      emit('SIGINT');
    });
    expect(seen).toEqual(['first SIGTERM', 'second SIGINT']);
  });

  it('so does the end of the grace period after the first, once', async () => {
    const seen = await withHandlers(20, async (so) => {
      emit('SIGTERM');
      await waitFor('the grace period to end', () => so.length >= 2);
    });
    expect(seen).toEqual(['first SIGTERM', 'second SIGTERM']);
  });
});
