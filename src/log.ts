/**
 * Structured logging (pino), object first. The API key and any Authorization header are
 * redacted by path, `scrubSecrets` removes a known secret from free text, and `maskUrlSecrets`
 * the credentials and query values of a URL.
 *
 * Lines are JSON, or human-readable (pino-pretty) when they go to a terminal: pino redacts and
 * serialises first, and the pretty printer only reformats the redacted line, so the two never
 * differ in what they reveal.
 */
import { createRequire } from 'node:module';
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

/** `json`, `pretty`, or `auto`: pretty when the lines go to a terminal, JSON otherwise. */
export type LogFormat = 'auto' | 'json' | 'pretty';

export interface LoggerOptions {
  level?: string;
  name?: string;
  /** Where lines go; default stderr, so stdout stays free for command output. */
  destination?: pino.DestinationStream;
  /**
   * Line format. Default `auto`: pretty when the destination is stderr and stderr is a TTY
   * (a given destination counts as a TTY only if it says so with `isTTY`).
   */
  format?: LogFormat;
  /**
   * Lines (their object argument) to leave out, e.g. the repeats of an error that is already
   * reported once elsewhere. Children of the logger leave them out too.
   */
  drop?: (line: Record<string, unknown>) => boolean;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const destination = options.destination ?? process.stderr;
  const pretty =
    options.format === 'pretty' ||
    ((options.format ?? 'auto') === 'auto' && (destination as { isTTY?: boolean }).isTTY === true);
  return pino(
    {
      level: options.level ?? 'info',
      name: options.name ?? 'harvest',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
      hooks: { logMethod: options.drop ? dropping(options.drop) : undefined },
    },
    pretty ? prettyDestination(destination) : (options.destination ?? pino.destination(2)),
  );
}

function dropping(drop: (line: Record<string, unknown>) => boolean) {
  return function logMethod(this: Logger, args: Parameters<pino.LogFn>, method: pino.LogFn) {
    const [first] = args;
    if (first !== null && typeof first === 'object' && drop(first as Record<string, unknown>)) {
      return;
    }
    method.apply(this, args);
  };
}

/**
 * A destination that reformats each JSON line with pino-pretty, synchronously (no worker
 * thread, no line lost on exit). pino-pretty is loaded only here, so JSON logging never pays
 * for it.
 */
function prettyDestination(out: pino.DestinationStream): pino.DestinationStream {
  const { prettyFactory, isColorSupported } = createRequire(import.meta.url)(
    'pino-pretty',
  ) as typeof import('pino-pretty');
  const format = prettyFactory({
    colorize: isColorSupported && (out as { isTTY?: boolean }).isTTY === true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'hostname',
  });
  return { write: (line: string) => out.write(format(line)) };
}

/** Replaces every occurrence of each secret in `text` with `[redacted]`. */
export function scrubSecrets(text: string, secrets: readonly (string | undefined)[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]');
  }
  return out;
}

/**
 * `url` as it may be printed: its user and password, every query value (a bare query part
 * whole) and its fragment shown as `***`, as a Redis password is. Webhook URLs carry their
 * secrets there (`?token=...`). Query names, host, port and path are kept; a URL with none of
 * these parts is returned as given.
 */
export function maskUrlSecrets(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Not a URL: print nothing of what may be a secret in credentials or a query.
    return url.replace(/\/\/[^@/]*@/, '//***@').replace(/[?#].*$/s, '?***');
  }
  if (!parsed.username && !parsed.password && !parsed.search && !parsed.hash) return url;
  const query = parsed.search
    .slice(1)
    .split('&')
    .map((part) => {
      if (part === '') return part;
      return part.includes('=') ? `${part.slice(0, part.indexOf('='))}=***` : '***';
    });
  const credentials = `${parsed.username ? '***' : ''}${parsed.password ? ':***' : ''}`;
  const user = credentials ? `${credentials}@` : '';
  const search = parsed.search ? `?${query.join('&')}` : '';
  return `${parsed.protocol}//${user}${parsed.host}${parsed.pathname}${search}${parsed.hash ? '#***' : ''}`;
}
