/** A logger whose JSON lines are kept in memory, for tests that check what was logged. */
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/log.ts';

export function capturedLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { logger: createLogger({ level: 'info', destination }), lines };
}
