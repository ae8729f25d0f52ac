import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { restoreTerminal } from '../../../src/cli/signals.ts';

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
