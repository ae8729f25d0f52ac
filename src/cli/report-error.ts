/**
 * How a command's error reaches the user: one line on stderr (`harvest: ...`, secrets
 * scrubbed, control characters escaped, no stack trace unless the error is unexpected), JSON on
 * stdout as well for `--json` (the message as it was), and the exit code (./exit-codes.ts).
 */
import { CommanderError } from 'commander';
import { ApiError } from '../api/errors.ts';
import { SettingsError } from '../config.ts';
import { HarvestError } from '../errors.ts';
import { scrubSecrets } from '../log.ts';
import { EXIT } from './exit-codes.ts';
import { terminalLines, terminalText } from './terminal-text.ts';

/**
 * Exit codes of API errors: the service refused the input (400) is bad input; anything else
 * the API answers once its retries are spent (the key or the account refused, 401, 402, 403;
 * the service failing, 5xx, timeouts, rate limits; out of reach; an answer that cannot be read
 * or is too large; an endpoint missing at HARVEST_API_URL) is the environment, as
 * `API_KEY_REFUSED` of a run is. None is a bug of harvest's, which exit 1 would say.
 */
function apiExitCode(error: ApiError): number {
  return error.code === 'BAD_REQUEST' ? EXIT.BAD_INPUT : EXIT.ENVIRONMENT;
}

export function exitCodeOf(error: HarvestError | SettingsError): number {
  if (error instanceof ApiError) return apiExitCode(error);
  return error instanceof HarvestError ? error.exitCode : EXIT.BAD_INPUT;
}

/**
 * Reports `error` and returns the exit code. `secrets` (the API key, the Redis password, ...)
 * are scrubbed from everything printed.
 */
export function reportError(error: unknown, secrets: readonly string[], json: boolean): number {
  if (error instanceof CommanderError) {
    // commander already printed help, the version, or its own usage message.
    if (error.exitCode === 0) return EXIT.OK;
    if (json) {
      printJsonError({ code: 'USAGE', message: error.message, exitCode: EXIT.BAD_INPUT }, secrets);
    }
    return EXIT.BAD_INPUT;
  }
  if (error instanceof HarvestError || error instanceof SettingsError) {
    const exitCode = exitCodeOf(error);
    // An API's message quotes the service's answer: it may hold a terminal's control sequences.
    console.error(`harvest: ${terminalText(scrubSecrets(error.message, secrets))}`);
    if (json) {
      const fields = error instanceof ApiError ? error.toJSON() : {};
      printJsonError({ ...fields, code: error.code, message: error.message, exitCode }, secrets);
    }
    return exitCode;
  }
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  console.error(`harvest: unexpected error: ${terminalLines(scrubSecrets(text, secrets))}`);
  if (json) {
    const message = error instanceof Error ? error.message : String(error);
    printJsonError({ code: 'UNEXPECTED_ERROR', message, exitCode: EXIT.FAILED }, secrets);
  }
  return EXIT.FAILED;
}

/** `{"ok": false, "error": {...}}` on stdout, for `--json`; the message also went to stderr. */
function printJsonError(fields: Record<string, unknown>, secrets: readonly string[]): void {
  const text = JSON.stringify({ ok: false, error: fields }, null, 2);
  process.stdout.write(`${scrubSecrets(text, secrets)}\n`);
}
