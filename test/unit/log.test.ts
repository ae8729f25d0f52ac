import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, type LogFormat } from '../../src/log.ts';

/** A destination that keeps what it is given, and claims to be a terminal when asked to. */
function sink(isTTY: boolean): { stream: Writable & { isTTY?: boolean }; text(): string } {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  }) as Writable & { isTTY?: boolean };
  if (isTTY) stream.isTTY = true;
  return { stream, text: () => text };
}

const SECRET = 'fc-0123456789abcdef';

function logOnce(isTTY: boolean, format?: LogFormat): string {
  const out = sink(isTTY);
  const logger = createLogger({ destination: out.stream, ...(format ? { format } : {}) });
  logger.info(
    { apiKey: SECRET, call: { headers: { authorization: `Bearer ${SECRET}` } }, runId: 'r1' },
    'worker started',
  );
  return out.text();
}

describe('createLogger', () => {
  it('writes JSON where nobody reads it live, the key redacted', () => {
    const line = logOnce(false);
    const record = JSON.parse(line) as Record<string, unknown>;
    expect(record).toMatchObject({
      level: 30,
      msg: 'worker started',
      apiKey: '[redacted]',
      call: { headers: { authorization: '[redacted]' } },
      runId: 'r1',
    });
    expect(line).not.toContain(SECRET);
  });

  it('writes human-readable lines to a terminal, the key redacted too', () => {
    const text = logOnce(true);
    expect(() => JSON.parse(text)).toThrow();
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO \(harvest\/\d+\): worker started\n/);
    expect(text).toContain('apiKey: "[redacted]"');
    expect(text).toContain('"authorization": "[redacted]"');
    expect(text).toContain('runId: "r1"');
    expect(text).not.toContain(SECRET);
  });

  it('LOG_FORMAT json or pretty overrides the guess', () => {
    expect(JSON.parse(logOnce(true, 'json'))).toMatchObject({ msg: 'worker started' });
    const pretty = logOnce(false, 'pretty');
    expect(pretty).toContain('INFO (harvest/');
    expect(pretty).not.toContain(SECRET);
    expect(pretty.includes('\u001b[')).toBe(false);
  });
});

describe('createLogger drop', () => {
  it('leaves out the lines it is told to, in children too', () => {
    const lines: string[] = [];
    const logger = createLogger({
      format: 'json',
      destination: { write: (line: string) => lines.push(line) } as never,
      drop: (line) => (line.err as { code?: string } | undefined)?.code === 'ECONNREFUSED',
    });
    const child = logger.child({ workerId: 'w' });
    child.error({ err: Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }) }, 'gone');
    child.error({ err: new Error('other') }, 'kept');
    logger.warn('plain message');
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(['kept', 'plain message']);
  });
});
