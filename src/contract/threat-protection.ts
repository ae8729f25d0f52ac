/**
 * ThreatProtectionOverride: provided fields replace the organization policy for one request.
 * List entries are trimmed and lowercased before they are checked (as the hosted service does).
 */
import { z } from 'zod';
import { isDomainGlob, isTld } from './hostnames.ts';
import { LIMITS } from './limits.ts';

const { listMaxItems, riskScoreThresholdMin, riskScoreThresholdMax } = LIMITS.threatProtection;

/** A plain domain or wildcard glob; no protocol, path or port. */
export const DomainGlobSchema = z.string().trim().toLowerCase().refine(isDomainGlob, {
  message: 'Must be a domain or wildcard glob without protocol, path or port',
});

/** A TLD, lowercase, without a leading dot. */
export const BlockedTldSchema = z
  .string()
  .trim()
  .toLowerCase()
  .refine(isTld, { message: 'Must be a lowercase TLD without a leading dot' });

export const ThreatProtectionModeSchema = z.enum(['off', 'normal']);

export const ThreatProtectionSchema = z.strictObject({
  /** `normal` checks URLs with a web-risk scanning service (+2 credits per URL scanned). */
  mode: ThreatProtectionModeSchema.optional(),
  /** Score 0..100 at or above which a classifier verdict blocks a URL; lower is stricter. */
  riskScoreThreshold: z.int().min(riskScoreThresholdMin).max(riskScoreThresholdMax).optional(),
  /** Always blocked. Max 1000 items. */
  blacklist: z.array(DomainGlobSchema).max(listMaxItems).optional(),
  /** Always allowed; wins over every other rule. Max 1000 items. */
  whitelist: z.array(DomainGlobSchema).max(listMaxItems).optional(),
  /** Max 1000 items. */
  blockedTlds: z.array(BlockedTldSchema).max(listMaxItems).optional(),
  /** What happens when the classifier is unreachable: `open` allows, `closed` blocks. */
  failurePolicy: z.enum(['open', 'closed']).optional(),
});
export type ThreatProtection = z.infer<typeof ThreatProtectionSchema>;
