/**
 * The crawl endpoints harvest exposes (`harvest crawls ...`): the team's active crawls, in v2
 * or in v1 normalised to the v2 shape, and the params preview. One call each through the same
 * API client and typed errors as searches, with a short in-process retry (./retry.ts).
 */
import { type ApiClient, createApiClient } from '../api/index.ts';
import { type RetryOptions, withRetry } from '../api/retry-now.ts';
import type { Settings } from '../config.ts';
import type { ActiveCrawlV2, ParamsPreviewResponse } from '../contract/index.ts';
import { UsageError } from '../errors.ts';

export { type RetryNotice, type RetryOptions, retryWaitMs, withRetry } from '../api/retry-now.ts';

export type ApiVersion = 'v1' | 'v2';

export interface ActiveCrawls {
  /** The listing that answered; v1 records are already in the v2 shape. */
  apiVersion: ApiVersion;
  crawls: ActiveCrawlV2[];
}

export interface CrawlPreview {
  url: string;
  prompt: string;
  /** The service's suggestion (`data` of its answer): the url and crawl options. */
  suggested: ParamsPreviewResponse['data'];
}

/** The team's active crawls (the key decides the team). */
export async function listActiveCrawls(
  settings: Settings,
  options: { apiVersion: ApiVersion; retry?: RetryOptions },
): Promise<ActiveCrawls> {
  const crawls = await withClient(settings, (client) =>
    withRetry(
      (signal) => client.activeCrawls({ version: options.apiVersion, ...signalOption(signal) }),
      options.retry,
    ),
  );
  return { apiVersion: options.apiVersion, crawls: crawls.body.crawls };
}

/**
 * The crawl options the service derives from a prompt. The start URL must be an absolute
 * http(s) URL (checked here, so a typo costs no call); the rest is the service's to judge, and
 * a 400 comes back as a BadRequestError with its message.
 */
export async function previewCrawl(
  settings: Settings,
  input: { url: string; prompt: string; retry?: RetryOptions },
): Promise<CrawlPreview> {
  checkStartUrl(input.url);
  const response = await withClient(settings, (client) =>
    withRetry(
      (signal) =>
        client.paramsPreview({ url: input.url, prompt: input.prompt }, signalOption(signal)),
      input.retry,
    ),
  );
  return { url: input.url, prompt: input.prompt, suggested: response.body.data };
}

/** Throws UsageError unless `url` is an absolute http or https URL. */
export function checkStartUrl(url: string): void {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    throw new UsageError(
      `--url must be an absolute http(s) URL such as https://example.com (received ${JSON.stringify(url)})`,
    );
  }
}

async function withClient<T>(settings: Settings, use: (client: ApiClient) => Promise<T>) {
  if (!settings.apiKey) {
    throw new UsageError(
      'HARVEST_API_KEY is not set: the crawl endpoints need an API key ' +
        '(for the offline sandbox: `harvest sandbox`, then HARVEST_API_URL and HARVEST_API_KEY as it prints)',
    );
  }
  const client = createApiClient({
    baseUrl: settings.apiUrl,
    apiKey: settings.apiKey,
    maxResponseBytes: settings.maxResponseBytes,
  });
  try {
    return await use(client);
  } finally {
    await client.close();
  }
}

function signalOption(signal: AbortSignal | undefined): { signal?: AbortSignal } {
  return signal ? { signal } : {};
}
