/**
 * Errors harvest raises on purpose carry a stable `code`; the CLI maps them to messages and
 * exit codes in one place (src/cli/main.ts).
 */
export class HarvestError extends Error {
  readonly code: string;
  /** Exit code the CLI uses when this error ends a command. */
  readonly exitCode: number;

  constructor(code: string, message: string, options: { cause?: unknown; exitCode?: number } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'HarvestError';
    this.code = code;
    this.exitCode = options.exitCode ?? 1;
  }
}

/** Bad input from the user (a flag, a file, a setting): exit code 2. */
export class UsageError extends HarvestError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('USAGE', message, { ...options, exitCode: 2 });
    this.name = 'UsageError';
  }
}
