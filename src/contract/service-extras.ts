/**
 * Request fields the reference does not list but the hosted service accepts, with the service's
 * own rules (read from its public request schema, `apps/api/src/controllers/v2/types.ts` and
 * `apps/api/src/utils/integration.ts` of the service's repository). Every other unlisted field,
 * internal ones included (`__searchPreviewToken`, `asyncScraping`, `useMock`, `__experimental_*`),
 * is rejected like any unknown key.
 */
import { z } from 'zod';

/** The integration names the hosted service accepts. */
export const INTEGRATIONS = [
  'dify',
  'zapier',
  'pipedream',
  'raycast',
  'langchain',
  'crewai',
  'llamaindex',
  'n8n',
  'camelai',
  'make',
  'flowise',
  'metagpt',
  'relevanceai',
  'viasocket',
  'cli',
  'hermes',
  'gstack',
  'prometheus',
] as const;
export type Integration = (typeof INTEGRATIONS)[number];

const INTEGRATION_NAMES: ReadonlySet<string> = new Set(INTEGRATIONS);

/** The hosted service's message for any other value, word for word. */
export const INTEGRATION_MESSAGE = `Invalid enum value. Expected ${INTEGRATIONS.map((name) => `'${name}'`).join(' | ')}`;

/**
 * True for a value the hosted service takes as `integration`: one of its integration names, or
 * a name starting with `_` (the service's escape for its own internal callers).
 */
export function isIntegration(value: unknown): value is string {
  return typeof value === 'string' && (INTEGRATION_NAMES.has(value) || value.startsWith('_'));
}

/** `integration`: the service's fixed set of names (anything else is a 400). */
export const IntegrationSchema = z.string().refine(isIntegration, { message: INTEGRATION_MESSAGE });

/**
 * `__agentInterop`: the service requires all three fields and drops any other key inside (it
 * then answers 403 unless `auth` is its own secret, so outside clients never get past it).
 */
export const AgentInteropSchema = z.object({
  auth: z.string(),
  requestId: z.string(),
  shouldBill: z.boolean(),
});
