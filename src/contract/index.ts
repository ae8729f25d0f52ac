/**
 * The wire contract of the Web Data Service API v2 (and v1 active crawls): zod schemas, inferred
 * types, documented defaults, exact error strings and credit rules. One truth for the pipeline
 * loader, the API client and the sandbox.
 */
export * from './actions.ts';
export * from './crawl.ts';
export * from './credits.ts';
export * from './defaults.ts';
export * from './errors.ts';
export * from './formats.ts';
export * from './hosted-service.ts';
export * from './hostnames.ts';
export * from './limits.ts';
export * from './response.ts';
export * from './scrape-options.ts';
export * from './search.ts';
export * from './service-extras.ts';
export * from './tbs.ts';
export * from './threat-protection.ts';
