/**
 * The sandbox's world over time. It advances by epochs (0 at start unless `epoch` says
 * otherwise; `POST /_sandbox/epoch` moves it on). From one epoch to the next, per seed and
 * deterministically:
 *
 * | share (default)  | what happens to each result or page                                  |
 * |------------------|----------------------------------------------------------------------|
 * | `content` (0.10) | the page's content changes (a new revision of its scraped fields)     |
 * | `rank` (0.05)    | half as many results trade places with one at most 3 positions away   |
 * | `churn` (0.05)   | the result drops out and a new page takes its position                |
 *
 * So about `rank` of the results of a ranking change position (each swap moves two), about
 * `churn` drop out and as many appear, and the answer of a query at an epoch is the same
 * whenever it is asked, in any order: epoch N follows from epoch 0 alone (a recent epoch of
 * a ranking is kept only to save steps), so going back gives the old answers again.
 */
import { createRandom } from './faults.ts';
import type { EpochShares } from './world-options.ts';

/** A 32-bit hash of two unsigned integers (murmur3's finaliser over a mix of both). */
export function mix(a: number, b: number): number {
  let h = (a ^ Math.imul(b + 0x9e3779b9, 0x85ebca6b)) >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const TO_UNIT = 1 / 4_294_967_296;

/**
 * The revision of a page at `epoch`: how many of epochs 1..epoch changed it (0: as at the
 * start). `pageSeed` identifies the page (its URL and the sandbox seed).
 */
export function contentRevision(pageSeed: number, epoch: number, share: number): number {
  if (share === 0) return 0;
  let revision = 0;
  for (let e = 1; e <= epoch; e++) if (mix(pageSeed, e) * TO_UNIT < share) revision++;
  return revision;
}

/** A ranking at one epoch; the next epoch's is worked out from it. */
interface RankingAt {
  epoch: number;
  ids: number[];
  nextId: number;
}

/**
 * The latest epoch worked out of recent rankings, so a world moving forward one epoch at a
 * time costs one step per ranking, not N. Keyed by ranking seed, length and shares.
 */
const recent = new Map<string, RankingAt>();
const MAX_RECENT = 20_000;

/**
 * The ids of a ranking of `length` results at `epoch`, best first. At epoch 0 the ids are
 * 0..length-1 in order; each later epoch replaces some (`churn`, new ids from `length` on, in
 * the same position) and swaps some neighbours (`rank`). Undefined at epoch 0 (ids in order).
 * The array is shared: read it, do not change it.
 */
export function rankedIds(
  rankingSeed: number,
  length: number,
  epoch: number,
  shares: EpochShares,
): readonly number[] | undefined {
  if (epoch === 0 || length === 0) return undefined;
  const key = `${rankingSeed}:${length}:${shares.rank}:${shares.churn}`;
  const known = recent.get(key);
  if (known?.epoch === epoch) return known.ids;
  const from =
    known && known.epoch < epoch
      ? { epoch: known.epoch, ids: known.ids.slice(), nextId: known.nextId }
      : { epoch: 0, ids: Array.from({ length }, (_, i) => i), nextId: length };
  for (let e = from.epoch + 1; e <= epoch; e++) step(from, rankingSeed, e, shares);
  from.epoch = epoch;
  if (recent.size >= MAX_RECENT) recent.clear();
  recent.set(key, from);
  return from.ids;
}

/** One epoch of a ranking: churn, then swaps of neighbours. */
function step(ranking: RankingAt, rankingSeed: number, epoch: number, shares: EpochShares): void {
  const { ids } = ranking;
  const length = ids.length;
  const random = createRandom(mix(rankingSeed, epoch));
  for (let i = 0; i < length; i++) if (random() < shares.churn) ids[i] = ranking.nextId++;
  const swapShare = shares.rank / 2;
  for (let i = 0; i < length; i++) {
    if (!(random() < swapShare)) continue;
    const distance = 1 + Math.floor(random() * 3);
    let j = random() < 0.5 ? i - distance : i + distance;
    if (j < 0 || j >= length) j = i - (j - i);
    if (j < 0 || j >= length) continue;
    const held = ids[i]!;
    ids[i] = ids[j]!;
    ids[j] = held;
  }
}
