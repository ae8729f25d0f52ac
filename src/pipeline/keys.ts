/**
 * Task keys and pipeline text hashes. The key of a task is a hash of its fully normalised request,
 * written with object keys sorted at every level: the same request gives the same key on any
 * machine, whatever order its keys were written in.
 */
import { hash } from 'node:crypto';
import { canonicalJson } from '../contract/canonical-json.ts';

export { canonicalJson };

/** Hex characters kept from the sha256 of the canonical request (64 bits). */
export const TASK_KEY_HEX_CHARS = 16;

/** First 16 hex characters of sha256(canonical JSON). */
export function hashCanonical(canonical: string): string {
  // One-shot hash (cheaper than createHash for a short text), and hex of the first bytes only:
  // a flat string of its own, not a slice that keeps all 64 characters alive.
  return hash('sha256', canonical, 'buffer').toString('hex', 0, TASK_KEY_HEX_CHARS / 2);
}

/** The stable key of a request: `hashCanonical(canonicalJson(request))`. */
export function taskKey(request: unknown): string {
  return hashCanonical(canonicalJson(request));
}

/** The hash a pipeline file's text is stored and scheduled under: sha256, 64 hex characters. */
export function pipelineTextHash(text: string): string {
  return hash('sha256', text, 'hex');
}
