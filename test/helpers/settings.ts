/** Settings for a test: its own Redis prefix, database file and data folder. */
import path from 'node:path';
import { loadSettings, type Settings } from '../../src/config.ts';

export function testSettings(input: {
  dir: string;
  prefix: string;
  apiUrl: string;
  apiKey?: string;
  /** More variables, e.g. `HARVEST_MEDIA_MAX_REISSUES`. */
  env?: Record<string, string>;
}): Settings {
  return loadSettings({
    HARVEST_API_URL: input.apiUrl,
    HARVEST_API_KEY: input.apiKey ?? 'fc-sandbox',
    HARVEST_DATA_DIR: input.dir,
    HARVEST_DB: path.join(input.dir, 'harvest.db'),
    HARVEST_PREFIX: input.prefix,
    REDIS_URL: 'redis://127.0.0.1:6379',
    LOG_LEVEL: 'silent',
    ...input.env,
  });
}
