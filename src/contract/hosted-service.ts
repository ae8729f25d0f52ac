/**
 * Rules the hosted service enforces beyond the reference. harvest follows the reference, so
 * these are warnings (a pipeline can show them before the hosted service answers 400), not
 * validation errors.
 */
import { hasFormat } from './formats.ts';
import type { SearchRequest } from './search.ts';

/** Largest `scrapeOptions.waitFor` the hosted service takes, in ms (its schema's maximum). */
export const HOSTED_MAX_WAIT_FOR_MS = 60_000;

/** Total `wait` time of the actions above which the hosted service refuses a request, in ms. */
export const HOSTED_MAX_TOTAL_WAIT_MS = 60_000;
/** What the hosted service counts for a `wait` action with a selector, in ms. */
const SELECTOR_WAIT_MS = 1_000;
/**
 * Largest screenshot viewport the hosted service takes, in pixels (8K). Known from the
 * conformance cases: a height of 4321 is refused; the width is taken to be 8K's as well.
 */
export const HOSTED_MAX_VIEWPORT = { width: 7680, height: 4320 } as const;

export interface HostedServiceWarning {
  path: Array<string | number>;
  message: string;
}

export function hostedServiceWarnings(request: SearchRequest): HostedServiceWarning[] {
  const warnings: HostedServiceWarning[] = [];
  const options = request.scrapeOptions;
  if (!options) return warnings;
  // waitFor over half of a timeout that was not written is fine: the hosted service's rule applies
  // only to a timeout that was sent, and harvest does not send its default then (requestToSend).
  if (options.waitFor !== undefined && options.waitFor > HOSTED_MAX_WAIT_FOR_MS) {
    warnings.push({
      path: ['scrapeOptions', 'waitFor'],
      message: `waitFor ${options.waitFor} ms is above ${HOSTED_MAX_WAIT_FOR_MS} ms; the hosted service refuses this`,
    });
  }
  const waitMs = (options.actions ?? []).reduce(
    (sum, action) =>
      action.type === 'wait' ? sum + (action.milliseconds ?? SELECTOR_WAIT_MS) : sum,
    options.waitFor ?? 0,
  );
  if (waitMs > HOSTED_MAX_TOTAL_WAIT_MS) {
    warnings.push({
      path: ['scrapeOptions', 'actions'],
      message: `actions and waitFor wait ${waitMs} ms in total; the hosted service refuses more than ${HOSTED_MAX_TOTAL_WAIT_MS} ms`,
    });
  }
  (options.formats ?? []).forEach((format, index) => {
    if (hasFormat([format], 'changeTracking')) {
      warnings.push({
        path: ['scrapeOptions', 'formats', index],
        message: 'the hosted service does not accept the changeTracking format in search',
      });
    }
    if (typeof format === 'object' && format.type === 'screenshot') {
      viewportWarnings(format.viewport, ['scrapeOptions', 'formats', index], warnings);
    }
  });
  (options.actions ?? []).forEach((action, index) => {
    if (action.type === 'screenshot') {
      viewportWarnings(action.viewport, ['scrapeOptions', 'actions', index], warnings);
    }
  });
  return warnings;
}

function viewportWarnings(
  viewport: { width: number; height: number } | undefined,
  at: Array<string | number>,
  warnings: HostedServiceWarning[],
): void {
  if (!viewport) return;
  for (const side of ['width', 'height'] as const) {
    if (viewport[side] > HOSTED_MAX_VIEWPORT[side]) {
      warnings.push({
        path: [...at, 'viewport', side],
        message: `viewport ${side} ${viewport[side]} px exceeds the hosted service's ${HOSTED_MAX_VIEWPORT[side]} px`,
      });
    }
  }
}
