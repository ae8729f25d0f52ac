/**
 * Output formats of a scrape (ScrapeOptions `formats` items): plain strings or objects with a
 * required `type`. Format objects reject unknown keys, except `screenshot` (the hosted service
 * accepts extra screenshot keys).
 */
import { z } from 'zod';
import { LIMITS } from './limits.ts';

/** Every format type of the reference. */
export const FORMAT_TYPES = [
  'markdown',
  'summary',
  'html',
  'rawHtml',
  'links',
  'images',
  'branding',
  'product',
  'menu',
  'screenshot',
  'json',
  'changeTracking',
  'audio',
  'video',
  'question',
  'highlights',
] as const;
export type FormatType = (typeof FORMAT_TYPES)[number];

/**
 * Format types usable as plain strings: all types without a required field. `question` and
 * `highlights` need their text, so only their object form is valid.
 */
export const FORMAT_STRING_TYPES = FORMAT_TYPES.filter(
  (type): type is Exclude<FormatType, 'question' | 'highlights'> =>
    type !== 'question' && type !== 'highlights',
);
export const FormatStringSchema = z.enum(FORMAT_STRING_TYPES);
export type FormatString = z.infer<typeof FormatStringSchema>;

/** Width and height in pixels, both required. */
export const ViewportSchema = z.strictObject({
  width: z.int().positive(),
  height: z.int().positive(),
});

const plainFormat = <T extends FormatType>(type: T) => z.strictObject({ type: z.literal(type) });

/** Options shared by the screenshot format and the screenshot action. */
export const screenshotOptions = {
  /** Capture the whole page. Default false. */
  fullPage: z.boolean().optional(),
  /** JPEG quality 1..100. */
  quality: z
    .int()
    .min(LIMITS.scrape.screenshotQualityMin)
    .max(LIMITS.scrape.screenshotQualityMax)
    .optional(),
  viewport: ViewportSchema.optional(),
};

/** The one format object whose unknown keys the service accepts. */
export const ScreenshotFormatSchema = z.looseObject({
  type: z.literal('screenshot'),
  ...screenshotOptions,
});

/** A JSON Schema object, kept as given. */
export const JsonSchemaObjectSchema = z.record(z.string(), z.unknown());

export const JsonFormatSchema = z.strictObject({
  type: z.literal('json'),
  schema: JsonSchemaObjectSchema.optional(),
  prompt: z.string().optional(),
  /** Accepted by the hosted service (not in the reference). */
  checkPromptInjection: z.boolean().optional(),
});

export const ChangeTrackingModeSchema = z.enum(['git-diff', 'json']);

export const ChangeTrackingFormatSchema = z.strictObject({
  type: z.literal('changeTracking'),
  modes: z.array(ChangeTrackingModeSchema).optional(),
  schema: JsonSchemaObjectSchema.optional(),
  prompt: z.string().optional(),
  /** History branch; default null. */
  tag: z.string().nullable().optional(),
});

export const QuestionFormatSchema = z.strictObject({
  type: z.literal('question'),
  question: z.string().max(LIMITS.scrape.formatTextMaxChars),
});

export const HighlightsFormatSchema = z.strictObject({
  type: z.literal('highlights'),
  query: z.string().max(LIMITS.scrape.formatTextMaxChars),
});

export const FormatObjectSchema = z.discriminatedUnion('type', [
  plainFormat('markdown'),
  plainFormat('summary'),
  plainFormat('html'),
  plainFormat('rawHtml'),
  plainFormat('links'),
  plainFormat('images'),
  plainFormat('branding'),
  plainFormat('product'),
  plainFormat('menu'),
  plainFormat('audio'),
  plainFormat('video'),
  ScreenshotFormatSchema,
  JsonFormatSchema,
  ChangeTrackingFormatSchema,
  QuestionFormatSchema,
  HighlightsFormatSchema,
]);
export type FormatObject = z.infer<typeof FormatObjectSchema>;

/** One `formats` item: a format string or a format object. */
export const FormatSchema = z.union([FormatStringSchema, FormatObjectSchema]);
export type Format = z.infer<typeof FormatSchema>;

/** The type of a format item, whichever form it has. */
export function formatType(format: Format): FormatType {
  return typeof format === 'string' ? format : format.type;
}

/** The object form of a format item (`'markdown'` becomes `{type: 'markdown'}`). */
export function toFormatObject(format: Format): FormatObject {
  return typeof format === 'string' ? ({ type: format } as FormatObject) : format;
}

/** True when `formats` holds an item of the given type. */
export function hasFormat(formats: readonly Format[] | undefined, type: FormatType): boolean {
  return (formats ?? []).some((format) => formatType(format) === type);
}
