/** What every command gets: settings parsed once, on first use (so `--help` never needs them). */
import type { Settings } from '../config.ts';

export interface CommandContext {
  settings(): Settings;
}

/** A context whose settings come from `load`, called at most once. */
export function createContext(load: () => Settings): CommandContext {
  let cached: Settings | undefined;
  return {
    settings() {
      cached ??= load();
      return cached;
    },
  };
}
