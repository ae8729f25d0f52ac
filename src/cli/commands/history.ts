/** `harvest history`: every run's position and content hash of a URL, or of a query's top results. */
import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';
import { oneOf, positiveInt } from '../flags.ts';
import { printMigration } from '../migration-notice.ts';

const FORMATS = ['table', 'json'] as const;

interface HistoryFlags {
  url?: string;
  query?: string;
  pipeline?: string;
  top?: number;
  format?: (typeof FORMATS)[number];
}

const HELP = `
One line per run and search the URL was in (or per result of the query's top), oldest run
first: its rank, how it compared with the run before (new, same, changed) and its content hash.

Examples:
  harvest history --url https://example.com/pricing
  harvest history --query "solar panel prices" --pipeline weekly-research --top 5
  harvest history --url https://example.com/pricing --format json`;

export function registerHistory(program: Command, ctx: CommandContext): void {
  program
    .command('history')
    .description("A URL's, or a query's top results', rank and content hash in every run.")
    .option('--url <url>', 'the result URL')
    .option('--query <text>', 'the search query, as the pipeline wrote it')
    .option('--pipeline <name>', 'only runs of this pipeline')
    .option('--top <n>', 'with --query: the top results per run (default 10)', positiveInt)
    .option('--format <format>', `${FORMATS.join(', ')} (default table)`, oneOf(FORMATS))
    .addHelpText('after', HELP)
    .action(async (flags: HistoryFlags) => {
      const { openStore } = await import('../../store/index.ts');
      const history = await import('../../report/changes/history.ts');
      // Writable: runs finished before their changes were recorded are recorded now.
      const store = openStore(ctx.settings().dbPath, {
        mustExist: true,
        onMigrate: printMigration,
      });
      try {
        const points = history.buildHistory(store, {
          url: flags.url,
          query: flags.query,
          pipelineName: flags.pipeline,
          top: flags.top,
        });
        process.stdout.write(
          flags.format === 'json'
            ? history.renderHistoryJson(points)
            : history.renderHistoryTable(points),
        );
      } finally {
        store.close();
      }
    });
}
