/**
 * How a command's error reaches the user: one line on stderr (`harvest: ...`, the API key
 * scrubbed, no stack trace unless the error is unexpected), JSON on stdout as well for
 * `--json`, and the exit code (see CONVENTIONS: 0 ok, 1 failed, 2 bad input, 3 environment,
 * 4 run not finished).
 */
import { CommanderError } from 'commander';
import { ApiError } from '../api/errors.ts';
import { SettingsError } from '../config.ts';
import { HarvestError } from '../errors.ts';
import { scrubSecrets } from '../log.ts';

/**
 * Exit codes of API errors that are not plain failures: the service refused the input (400:
 * bad input); or the key or the account (401, 402) or the service could not be reached, which
 * are the environment (as `API_KEY_REFUSED` of a run is).
 */
const API_EXIT_CODES: Partial<Record<ApiError['code'], number>> = {
  BAD_REQUEST: 2,
  UNAUTHORIZED: 3,
  PAYMENT_REQUIRED: 3,
  NETWORK: 3,
};

export function exitCodeOf(error: HarvestError | SettingsError): number {
  if (error instanceof ApiError) return API_EXIT_CODES[error.code] ?? error.exitCode;
  return error instanceof HarvestError ? error.exitCode : 2;
}

export function reportError(error: unknown, apiKey: string | undefined, json: boolean): number {
  if (error instanceof CommanderError) {
    // commander already printed help, the version, or its own usage message.
    if (error.exitCode === 0) return 0;
    if (json) printJsonError({ code: 'USAGE', message: error.message, exitCode: 2 }, apiKey);
    return 2;
  }
  if (error instanceof HarvestError || error instanceof SettingsError) {
    const exitCode = exitCodeOf(error);
    console.error(`harvest: ${scrubSecrets(error.message, [apiKey])}`);
    if (json) {
      const fields = error instanceof ApiError ? error.toJSON() : {};
      printJsonError({ ...fields, code: error.code, message: error.message, exitCode }, apiKey);
    }
    return exitCode;
  }
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  console.error(`harvest: unexpected error: ${scrubSecrets(text, [apiKey])}`);
  if (json) {
    const message = error instanceof Error ? error.message : String(error);
    printJsonError({ code: 'UNEXPECTED_ERROR', message, exitCode: 1 }, apiKey);
  }
  return 1;
}

/** `{"ok": false, "error": {...}}` on stdout, for `--json`; the message also went to stderr. */
function printJsonError(fields: Record<string, unknown>, apiKey: string | undefined): void {
  const text = JSON.stringify({ ok: false, error: fields }, null, 2);
  process.stdout.write(`${scrubSecrets(text, [apiKey])}\n`);
}
