/**
 * Browser actions run before content capture (ScrapeOptions `actions`). Each has a required
 * `type`; unknown keys are rejected.
 */
import { z } from 'zod';
import { screenshotOptions } from './formats.ts';
import { LIMITS } from './limits.ts';

/**
 * `wait`: exactly one of `milliseconds` (integer >= 1) or `selector` (CSS selector).
 */
export const WaitActionSchema = z
  .strictObject({
    type: z.literal('wait'),
    milliseconds: z.int().min(LIMITS.scrape.waitActionMinMs).optional(),
    selector: z.string().optional(),
  })
  .superRefine((action, ctx) => {
    const given = Number(action.milliseconds !== undefined) + Number(action.selector !== undefined);
    if (given !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: 'wait needs exactly one of milliseconds or selector',
        path: [],
      });
    }
  });

export const ScreenshotActionSchema = z.strictObject({
  type: z.literal('screenshot'),
  ...screenshotOptions,
});

export const ClickActionSchema = z.strictObject({
  type: z.literal('click'),
  selector: z.string(),
  /** Click every match; no error when nothing matches. Default false. */
  all: z.boolean().optional(),
});

export const WriteActionSchema = z.strictObject({
  type: z.literal('write'),
  text: z.string(),
});

export const PressActionSchema = z.strictObject({
  type: z.literal('press'),
  key: z.string(),
});

export const ScrollActionSchema = z.strictObject({
  type: z.literal('scroll'),
  /** Default `down`. */
  direction: z.enum(['up', 'down']).optional(),
  selector: z.string().optional(),
});

export const ScrapeActionSchema = z.strictObject({ type: z.literal('scrape') });

export const ExecuteJavascriptActionSchema = z.strictObject({
  type: z.literal('executeJavascript'),
  script: z.string(),
});

export const PDF_PAGE_FORMATS = [
  'A0',
  'A1',
  'A2',
  'A3',
  'A4',
  'A5',
  'A6',
  'Letter',
  'Legal',
  'Tabloid',
  'Ledger',
] as const;

export const PdfActionSchema = z.strictObject({
  type: z.literal('pdf'),
  /** Paper format; default `Letter`. */
  format: z.enum(PDF_PAGE_FORMATS).optional(),
  /** Default false. */
  landscape: z.boolean().optional(),
  /** Rendering scale; default 1 (the reference sets no bound, nor does the hosted service). */
  scale: z.number().optional(),
});

export const ActionSchema = z.discriminatedUnion('type', [
  WaitActionSchema,
  ScreenshotActionSchema,
  ClickActionSchema,
  WriteActionSchema,
  PressActionSchema,
  ScrollActionSchema,
  ScrapeActionSchema,
  ExecuteJavascriptActionSchema,
  PdfActionSchema,
]);
export type Action = z.infer<typeof ActionSchema>;
