/**
 * Numeric bounds of the wire contract, as stated by the reference (web-data-service-api.md,
 * sections "Resources" and "Limits"). Schemas and the sandbox read them from here only.
 */

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

export const LIMITS = {
  search: {
    /** Max characters in `query`. The hosted service accepts more; harvest follows the reference. */
    queryMaxChars: 500,
    /** `limit` bounds and default: results per source type. */
    limitMin: 1,
    limitMax: 100,
    limitDefault: 10,
    /** Default search `timeout` in ms. */
    timeoutDefaultMs: 60_000,
  },
  scrape: {
    /** `scrapeOptions.timeout` bounds and default, in ms. */
    timeoutMinMs: 1_000,
    timeoutMaxMs: 300_000,
    timeoutDefaultMs: 60_000,
    /** Default `maxAge` in ms (2 days). */
    maxAgeDefaultMs: 2 * DAY_MS,
    /** Default `maxAge` under `lockdown`, in ms (2 years of 365 days). */
    maxAgeLockdownDefaultMs: 2 * 365 * DAY_MS,
    /** `parsers[].maxPages` bounds. */
    parserMaxPagesMin: 1,
    parserMaxPagesMax: 10_000,
    /** `profile.name` length bounds, in characters. */
    profileNameMinChars: 1,
    profileNameMaxChars: 128,
    /** `auditMetadata.username` max length, in characters. */
    auditUsernameMaxChars: 1_024,
    /** `question` format `question` and `highlights` format `query`, max characters each. */
    formatTextMaxChars: 10_000,
    /** Screenshot `quality` bounds. */
    screenshotQualityMin: 1,
    screenshotQualityMax: 100,
    /** `wait` action `milliseconds` minimum. */
    waitActionMinMs: 1,
  },
  threatProtection: {
    /** Max items in `blacklist`, `whitelist` and `blockedTlds` each. */
    listMaxItems: 1_000,
    riskScoreThresholdMin: 0,
    riskScoreThresholdMax: 100,
  },
  crawl: {
    /** Max characters in the params-preview `prompt` (hosted service). */
    previewPromptMaxChars: 10_000,
  },
  /** Max request body size in bytes (10 MB), answered with 413 by the hosted service. */
  requestBodyMaxBytes: 10 * 1024 * 1024,
} as const;

/** Lifetime of signed media URLs from the moment the response was produced, in ms. */
export const MEDIA_LIFETIME_MS = {
  screenshot: DAY_MS,
  audio: HOUR_MS,
  video: HOUR_MS,
} as const;

export type MediaKind = keyof typeof MEDIA_LIFETIME_MS;
