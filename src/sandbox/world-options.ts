/**
 * Options of the sandbox's world (world.ts): the epoch it starts in, what changes per epoch,
 * and what scraped pages hold; with the parsers of their command-line spellings.
 */
import { UsageError } from '../errors.ts';

/** Probabilities (0..1) per epoch; see the table in world.ts. */
export interface EpochShares {
  content: number;
  rank: number;
  churn: number;
}

export const DEFAULT_EPOCH_SHARES: Readonly<EpochShares> = Object.freeze({
  content: 0.1,
  rank: 0.05,
  churn: 0.05,
});

/**
 * What scraped pages hold: `short`, a few generated sentences per page; `corpus`, real prose
 * and markup from the documentation of installed packages, sized like real pages (see
 * corpus.ts and pages.ts).
 */
export type ContentMode = 'short' | 'corpus';
export const CONTENT_MODES: readonly ContentMode[] = ['short', 'corpus'];

export interface WorldOptions {
  epoch?: number | undefined;
  epochShares?: Partial<EpochShares> | undefined;
  content?: ContentMode | undefined;
}

export interface ResolvedWorld {
  /** The epoch the sandbox starts in. */
  epoch: number;
  shares: EpochShares;
  content: ContentMode;
}

export function resolveWorld(options: WorldOptions): ResolvedWorld {
  const epoch = options.epoch ?? 0;
  checkEpoch(epoch);
  const shares = { ...DEFAULT_EPOCH_SHARES, ...options.epochShares };
  for (const [name, share] of Object.entries(shares)) {
    if (!(share >= 0 && share <= 1)) {
      throw new UsageError(`epoch share ${name} must be in 0..1, got ${share}`);
    }
  }
  const content = options.content ?? 'short';
  if (!CONTENT_MODES.includes(content)) {
    throw new UsageError(`content must be one of ${CONTENT_MODES.join(', ')}, got "${content}"`);
  }
  return { epoch, shares, content };
}

/**
 * Epochs are whole numbers from 0 to 10,000 (epoch N is worked out from epoch 0, in about
 * N x 100 steps per ranking, so this bounds the work of one answer to milliseconds).
 */
export const MAX_EPOCH = 10_000;

export function checkEpoch(epoch: number): void {
  if (!(Number.isSafeInteger(epoch) && epoch >= 0 && epoch <= MAX_EPOCH)) {
    throw new UsageError(`epoch must be a whole number from 0 to ${MAX_EPOCH}, got ${epoch}`);
  }
}

/** `content=0.1,rank=0.05,churn=0.05` (any of them; the others keep their defaults). */
export function parseEpochShares(text: string): Partial<EpochShares> {
  const out: Partial<EpochShares> = {};
  for (const item of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [name, value] = item.split('=');
    const share = Number(value);
    if (
      (name !== 'content' && name !== 'rank' && name !== 'churn') ||
      value === undefined ||
      value.trim() === '' ||
      !(share >= 0 && share <= 1)
    ) {
      throw new UsageError(
        `--epoch-shares: expected NAME=SHARE with NAME in content, rank, churn and SHARE in 0..1; got "${item}"`,
      );
    }
    out[name] = share;
  }
  return out;
}

export function parseContentMode(text: string): ContentMode {
  const mode = CONTENT_MODES.find((m) => m === text.trim());
  if (!mode) {
    throw new UsageError(`--content: expected one of ${CONTENT_MODES.join(', ')}, got "${text}"`);
  }
  return mode;
}
