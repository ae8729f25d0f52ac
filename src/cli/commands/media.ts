/**
 * `harvest media`: what was saved of the media behind signed URLs, checking the files, and
 * queueing failed ones again.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { isMediaKind, MEDIA_KINDS, type MediaKind } from '../../media/kinds.ts';
import { suggestionSuffix } from '../../pipeline/issues.ts';
import type { CommandContext } from '../context.ts';

interface MediaOptions {
  json?: boolean;
}

interface RetryOptions {
  kind?: MediaKind;
  reissue?: boolean;
  json?: boolean;
}

function mediaKind(value: string): MediaKind {
  if (isMediaKind(value)) return value;
  const hint = suggestionSuffix(value, MEDIA_KINDS);
  throw new InvalidArgumentError(
    `unknown media kind "${value}"${hint} (kinds: ${MEDIA_KINDS.join(', ')})`,
  );
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
  media
    .command('retry')
    .description(
      'Queue failed media again, with no new call: items whose URL still works are downloaded by a worker with the media role; items whose URL expired only with --reissue (a billed search each). Resumes a media queue paused for a full disk.',
    )
    .argument('[run]', 'run id (default: every run)')
    .option('--kind <kind>', `only media of this kind (${MEDIA_KINDS.join(', ')})`, mediaKind)
    .option('--reissue', 'also queue items whose URL expired: each gets a fresh URL (billed)')
    .option('--json', 'machine-readable output')
    .addHelpText(
      'after',
      '\nExamples:\n  harvest media retry                                # after freeing disk space\n  harvest media retry 20261122T101500-a1b2 --kind screenshot\n  harvest media retry 20261122T101500-a1b2 --reissue # expired URLs too: billed searches',
    )
    .action(async (runId: string | undefined, _opts: RetryOptions, command: Command) => {
      const { mediaRetry } = await import('../actions/media.ts');
      const opts = command.optsWithGlobals() as RetryOptions;
      await mediaRetry(ctx.settings(), runId, {
        ...(opts.kind === undefined ? {} : { kind: opts.kind }),
        reissue: opts.reissue === true,
        json: opts.json === true,
      });
    });
}
