import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createExportProgress } from '../../../src/cli/export-progress.ts';

/** A terminal the bar can draw on, keeping what was written. */
function terminal(): { stream: NodeJS.WriteStream; text: () => string } {
  const stream = new PassThrough() as unknown as NodeJS.WriteStream & PassThrough;
  let written = '';
  stream.on('data', (chunk: Buffer) => {
    written += chunk.toString();
  });
  Object.assign(stream, {
    isTTY: true,
    columns: 120,
    cursorTo: () => true,
    clearLine: () => true,
    moveCursor: () => true,
  });
  return { stream, text: () => written };
}

describe('export progress bar', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('counts its rate from the first row, not from before the count of rows', () => {
    vi.useFakeTimers();
    const { stream, text } = terminal();
    const progress = createExportProgress(stream);
    vi.advanceTimersByTime(10_000); // counting the rows to export took 10 s
    progress.start(1_000);
    vi.advanceTimersByTime(2_000);
    progress.update(500);
    vi.advanceTimersByTime(200);
    progress.stop();
    expect(text()).toContain('500/1000 rows | 250 rows/s');
  });
});
