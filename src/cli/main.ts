/**
 * The `harvest` binary. Commands live one per file in ./commands and register themselves on
 * the program; they return or throw, and this file alone maps errors to messages and exit codes
 * (through ./report-error.ts).
 */
import { Command, CommanderError } from 'commander';
import { COMMANDS } from './commands/index.ts';
import { createContext } from './context.ts';
import { reportError } from './report-error.ts';

export async function main(argv: readonly string[] = process.argv): Promise<number> {
  const ctx = createContext();
  const program = new Command('harvest')
    .description('Run YAML pipelines of web searches against the Web Data Service API v2.')
    .version('0.1.0')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  for (const register of COMMANDS) register(program, ctx);
  // `--json` asks for JSON on stdout, errors included; known once the command's flags are parsed.
  let json = false;
  program.hook('preAction', (_program, command) => {
    json = command.opts().json === true;
  });

  try {
    await program.parseAsync([...argv]);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    // A usage error stops commander before preAction: the flag is looked for by hand then.
    const wantsJson = json || (error instanceof CommanderError && argv.includes('--json'));
    return reportError(error, process.env.HARVEST_API_KEY, wantsJson);
  }
}

const code = await main();
process.exitCode = code;
