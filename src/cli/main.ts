/**
 * The `harvest` binary. Commands live one per file in ./commands and register themselves on
 * the program; only the command asked for is loaded (./commands/index.ts). Commands return or
 * throw, and this file alone maps errors to messages and exit codes (through ./report-error.ts,
 * with the codes of ./exit-codes.ts). The environment is read only through src/config.ts.
 */
import { Command, CommanderError } from 'commander';
import { systemErrorText } from '../report/export/system-error.ts';
import { COMMANDS, requestedCommand } from './commands/index.ts';
import { type CommandContext, createContext } from './context.ts';
import { EXIT, EXIT_CODES_HELP } from './exit-codes.ts';

type Config = typeof import('../config.ts');

/**
 * A reader that goes away (`harvest status | head -1`) is not an error: what is left to print
 * is dropped and the command ends as it would have. It does not end the process either: a run
 * or a worker writing to a closed pipe goes on, and stops as it should.
 */
function closedPipe(error: NodeJS.ErrnoException): boolean {
  return error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED';
}

/** True once stdout failed and that was said. */
let stdoutFailed = false;

/**
 * stdout that fails otherwise (a full disk, an I/O error) is said in one line and ends in exit
 * 3, whenever the failure comes: a write's error arrives after it, maybe once the command is
 * done. What is left to print is dropped. A failing stderr stays an unexpected error: there
 * is nowhere left to say it.
 */
function watchOutputs(): void {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (closedPipe(error) || stdoutFailed) return;
    stdoutFailed = true;
    console.error(`harvest: cannot write to stdout: ${systemErrorText(error)}`);
    process.exitCode = EXIT.ENVIRONMENT;
  });
  process.stderr.on('error', (error: NodeJS.ErrnoException) => {
    if (closedPipe(error)) return;
    throw error;
  });
}

export async function main(argv: readonly string[] = process.argv): Promise<number> {
  watchOutputs();
  // Loaded once a command runs: `--help` and usage errors never parse the environment.
  let config: Config | undefined;
  const ctx: CommandContext = createContext(() => {
    if (!config) throw new Error('settings were read before the command started');
    return config.loadSettings();
  });
  const program = new Command('harvest')
    .description('Run YAML pipelines of web searches against the Web Data Service API v2.')
    .version('0.1.0')
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText('after', EXIT_CODES_HELP)
    .exitOverride();
  await registerCommands(program, ctx, argv.slice(2));
  // `--json` asks for JSON on stdout, errors included; known once the command's flags are parsed.
  let json = false;
  program.hook('preAction', async (_program, command) => {
    json = command.opts().json === true;
    config = await import('../config.ts');
  });

  try {
    await program.parseAsync([...argv]);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.OK;
  } catch (error) {
    // Help and the version: commander printed them, nothing to report.
    if (error instanceof CommanderError && error.exitCode === 0) return EXIT.OK;
    // An export to stdout stopped by stdout's failure, said already.
    if (stdoutFailed && (error as { code?: unknown }).code === 'OUTPUT_FAILED') {
      return EXIT.ENVIRONMENT;
    }
    // A usage error stops commander before preAction: the flag is looked for by hand then.
    const wantsJson = json || argv.includes('--json');
    const [{ reportError }, { secretsOf }, { openError }] = await Promise.all([
      import('./report-error.ts'),
      import('../config.ts'),
      import('../store/open-errors.ts'),
    ]);
    // SQLite refusing later than at open (locked, read-only, damaged): one line naming the file.
    const dbPath = config ? safely(() => ctx.settings().dbPath) : undefined;
    return reportError(openError(dbPath ?? 'the database', false, error), secretsOf(), wantsJson);
  }
}

function safely<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

/**
 * The command asked for is registered in full; the others by name and summary only, which is
 * all the program's help (and commander's "did you mean") needs.
 */
async function registerCommands(
  program: Command,
  ctx: CommandContext,
  args: readonly string[],
): Promise<void> {
  const requested = requestedCommand(args);
  const register = requested ? await requested.load() : undefined;
  for (const entry of COMMANDS) {
    if (entry === requested && register) register(program, ctx);
    else program.command(entry.name).helpOption(false).allowUnknownOption();
    program.commands.at(-1)?.summary(entry.summary);
  }
  const terms = new Map(COMMANDS.map((entry) => [entry.name, entry.term]));
  const help = program.createHelp();
  program.configureHelp({
    subcommandTerm: (command) => terms.get(command.name()) ?? help.subcommandTerm(command),
  });
}

process.exitCode = await main();
