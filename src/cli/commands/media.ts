/** `harvest media`: what was saved of the media behind signed URLs, and checking the files. */
import type { Command } from 'commander';
import type { CommandContext } from '../context.ts';

interface MediaOptions {
  json?: boolean;
}

export function registerMedia(program: Command, ctx: CommandContext): void {
  const media = program
    .command('media')
    .description(
      'Media of a run (or of all runs): counts by kind and status, re-issues, failures, bytes stored.',
    )
    .argument('[run]', 'run id (default: every run)')
    .option('--json', 'machine-readable output')
    .addHelpText(
      'after',
      '\nExamples:\n  harvest media\n  harvest media 20261122T101500-a1b2 --json\n  harvest media verify            # re-hash every saved file; exit 1 if one is missing or corrupt',
    )
    .action(async (runId: string | undefined, opts: MediaOptions) => {
      const { mediaListing } = await import('../actions/media.ts');
      await mediaListing(ctx.settings(), runId, opts.json === true);
    });
  media
    .command('verify')
    .description(
      'Re-hash the saved media files; exit 1 if any is missing or corrupt. Without a run, also list stored files no saved row points at (they do not change the exit code).',
    )
    .argument('[run]', 'run id (default: every run)')
    .option('--json', 'machine-readable output')
    .addHelpText(
      'after',
      '\nExamples:\n  harvest media verify\n  harvest media verify 20261122T101500-a1b2 --json',
    )
    .action(async (runId: string | undefined, _opts: MediaOptions, command: Command) => {
      const { mediaVerify } = await import('../actions/media.ts');
      // `--json` after `verify` may be taken by `media` itself: read both.
      const json = (command.optsWithGlobals() as MediaOptions).json === true;
      process.exitCode = await mediaVerify(ctx.settings(), runId, json);
    });
}
