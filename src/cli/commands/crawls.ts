/** `harvest crawls active|preview`: the team's active crawls, and the options a prompt gives. */
import { type Command, InvalidArgumentError } from 'commander';
import type { RetryNotice } from '../../crawls/index.ts';
import type { CommandContext } from '../context.ts';

function apiVersion(value: string): 'v1' | 'v2' {
  if (value === 'v1' || value === 'v2') return value;
  throw new InvalidArgumentError('v1 or v2');
}

/** A retry is news for stderr; stdout keeps only the answer (or the JSON). */
function sayRetry({ error, attempt, maxAttempts, waitMs }: RetryNotice): void {
  process.stderr.write(
    `harvest: ${error.message}; trying again in ${(waitMs / 1000).toFixed(1)} s (attempt ${attempt + 1} of ${maxAttempts})\n`,
  );
}

function print(text: string): void {
  process.stdout.write(`${text}\n`);
}

export function registerCrawls(program: Command, ctx: CommandContext): void {
  const crawls = program
    .command('crawls')
    .description("The team's crawls on the service: the active ones, and a params preview.");

  crawls
    .command('active')
    .description(
      "List the team's active crawls (the API key decides the team). v1 answers are shown in " +
        'v2 names: parsePDF as parsers, jsonOptions and changeTrackingOptions as format objects, ' +
        'maxDepth as maxDiscoveryDepth, and the v1 defaults that differ from v2 written out.',
    )
    .option('--api-version <v>', 'listing to ask: v2, or v1 (normalised to v2)', apiVersion, 'v2')
    .option('--json', 'machine-readable output (errors too)')
    .addHelpText(
      'after',
      '\nExamples:\n  harvest crawls active\n  harvest crawls active --api-version v1 --json',
    )
    .action(async (opts: { apiVersion: 'v1' | 'v2'; json?: boolean }) => {
      const { listActiveCrawls } = await import('../../crawls/index.ts');
      const { formatActiveCrawls } = await import('../../crawls/format.ts');
      const result = await listActiveCrawls(ctx.settings(), {
        apiVersion: opts.apiVersion,
        retry: { onRetry: sayRetry },
      });
      print(
        opts.json ? JSON.stringify({ ok: true, ...result }, null, 2) : formatActiveCrawls(result),
      );
    });

  crawls
    .command('preview')
    .description(
      'Ask the service which crawl options (paths, limits, depth, sitemap) it derives from a ' +
        'natural-language prompt, before starting a crawl (POST /v2/crawl/params-preview).',
    )
    .requiredOption('--url <url>', 'start URL of the crawl (absolute http or https)')
    .requiredOption('--prompt <text>', 'what to crawl, in plain words')
    .option('--json', 'machine-readable output (errors too)')
    .addHelpText(
      'after',
      '\nExamples:\n' +
        '  harvest crawls preview --url https://docs.example.com --prompt "only the API reference, 200 pages"\n' +
        '  harvest crawls preview --url https://example.com --prompt "the blog, not the careers pages" --json',
    )
    .action(async (opts: { url: string; prompt: string; json?: boolean }) => {
      const { previewCrawl } = await import('../../crawls/index.ts');
      const { formatPreview } = await import('../../crawls/format.ts');
      const preview = await previewCrawl(ctx.settings(), {
        url: opts.url,
        prompt: opts.prompt,
        retry: { onRetry: sayRetry },
      });
      print(opts.json ? JSON.stringify({ ok: true, ...preview }, null, 2) : formatPreview(preview));
    });
}
