/**
 * Headless Chromium for tests and screenshots, driven with playwright-core: the Debian package
 * (`apt-get install -y chromium`), a fresh profile each time, and no network of its own.
 */
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

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

/** A page of a report file as rendered, with what it logged and what it asked for. */
export interface RenderedReport {
  page: Page;
  /** Console errors and warnings, and uncaught page errors. */
  problems: string[];
  /** Every URL the page requested, itself first. */
  requests: string[];
}

/**
 * Opens `file` in `browser` and waits for the report to say it has rendered
 * (`body[data-rendered="true"]`), recording its console problems and requests meanwhile.
 */
export async function openReport(browser: Browser, file: string): Promise<RenderedReport> {
  const page = browser.context.pages()[0] ?? (await browser.context.newPage());
  const problems: string[] = [];
  const requests: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('request', (r) => requests.push(r.url()));
  await page.goto(`file://${file}`);
  await page.waitForSelector('body[data-rendered="true"]', { timeout: 10_000 });
  return { page, problems, requests };
}
