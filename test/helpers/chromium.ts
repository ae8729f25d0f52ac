/**
 * Headless Chromium for tests and screenshots, driven with playwright-core: the Debian package
 * (`apt-get install -y chromium`), a fresh profile each time, and no network of its own.
 */
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';

/** Flags for a quiet, offline, sandbox-less headless browser in a container. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Why Chromium cannot run here, or undefined when it can. */
export function chromiumMissing(): string | undefined {
  try {
    accessSync(CHROMIUM_PATH, constants.X_OK);
    return undefined;
  } catch {
    return `no Chromium at ${CHROMIUM_PATH}: install it with \`apt-get update && apt-get install -y chromium\` (.ci/run does when it can)`;
  }
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** A browser with a fresh profile directory, removed again on close. */
export async function launchChromium(viewport = { width: 1280, height: 800 }): Promise<Browser> {
  const profile = mkdtempSync(path.join(tmpdir(), 'harvest-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport,
    });
    return {
      context,
      async close() {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(profile, { recursive: true, force: true });
    throw error;
  }
}
