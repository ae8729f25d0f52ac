/** What every command gets: settings parsed once (lazily, so `--help` never needs them). */
import { loadSettings, type Settings } from '../config.ts';

export interface CommandContext {
  settings(): Settings;
}

export function createContext(env: NodeJS.ProcessEnv = process.env): CommandContext {
  let cached: Settings | undefined;
  return {
    settings() {
      cached ??= loadSettings(env);
      return cached;
    },
  };
}
