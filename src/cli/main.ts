/**
 * The `harvest` binary. Commands live one per file in ./commands and register themselves on
 * the program; they return or throw, and this file alone maps errors to messages and exit codes.
 */
import { Command, CommanderError } from 'commander';
import { SettingsError } from '../config.ts';
import { HarvestError } from '../errors.ts';
import { scrubSecrets } from '../log.ts';
import { COMMANDS } from './commands/index.ts';
import { createContext } from './context.ts';

export async function main(argv: readonly string[] = process.argv): Promise<number> {
  const ctx = createContext();
  const program = new Command('harvest')
    .description('Run YAML pipelines of web searches against the Web Data Service API v2.')
    .version('0.1.0')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  for (const register of COMMANDS) register(program, ctx);

  try {
    await program.parseAsync([...argv]);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    return reportError(error, process.env.HARVEST_API_KEY);
  }
}

function reportError(error: unknown, apiKey: string | undefined): number {
  if (error instanceof CommanderError) {
    // commander already printed help, the version, or its own usage message.
    return error.exitCode === 0 ? 0 : 2;
  }
  if (error instanceof HarvestError || error instanceof SettingsError) {
    console.error(`harvest: ${scrubSecrets(error.message, [apiKey])}`);
    return error instanceof HarvestError ? error.exitCode : 2;
  }
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  console.error(`harvest: unexpected error: ${scrubSecrets(text, [apiKey])}`);
  return 1;
}

const code = await main();
process.exitCode = code;
