/**
 * Structured logging (pino), object first. The API key and any Authorization header are
 * redacted by path, and `scrubSecrets` removes a known secret from free text.
 */
import pino, { type Logger } from 'pino';

export type { Logger };

const REDACT_PATHS = [
  'apiKey',
  '*.apiKey',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'req.headers.authorization',
];

export interface LoggerOptions {
  level?: string;
  name?: string;
  /** Where lines go; default stderr, so stdout stays free for command output. */
  destination?: pino.DestinationStream;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      name: options.name ?? 'harvest',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
    },
    options.destination ?? pino.destination(2),
  );
}

/** Replaces every occurrence of each secret in `text` with `[redacted]`. */
export function scrubSecrets(text: string, secrets: readonly (string | undefined)[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]');
  }
  return out;
}
