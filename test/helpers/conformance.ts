/** The conformance cases of POST /v2/search bodies (a copy of ../shared/conformance). */
import { readFileSync } from 'node:fs';

export interface ConformanceCase {
  name: string;
  body: unknown;
  reference: 'valid' | 'invalid' | 'ambiguous';
  why: string;
  hosted_service: 'valid' | 'invalid';
  hosted_service_error_paths?: string[];
}

export const conformanceCases: readonly ConformanceCase[] = JSON.parse(
  readFileSync(new URL('../fixtures/conformance-search-requests.json', import.meta.url), 'utf8'),
);
