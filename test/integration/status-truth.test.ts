/**
 * `harvest status` says what is true: tasks whose calls are in flight count as running; an
 * interrupted run is resumed, not waited on with `harvest worker`; a 402 reads as out of
 * credits, not as the API key; and what the API said is printed with its control characters
 * escaped (a title-setting sequence, a screen clear, CR and LF), while `--json` keeps it exact.
 * Real Redis, the sandbox on port 0 (or a loopback server answering as the API), a temp SQLite
 * file, the binary in a child process.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Settings } from '../../src/config.ts';
import { startRun } from '../../src/run/start.ts';
import { stopRun } from '../../src/run/stop.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { runCli } from '../helpers/cli.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { startMediaHost } from '../helpers/media-host.ts';
import { waitFor } from '../helpers/wait.ts';

let h: Harness | undefined;
const undo: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const step of undo.splice(0).reverse()) await step();
  await h?.stop();
  h = undefined;
}, 60_000);

const tasks = (name: string, n: number) =>
  `name: ${name}\nsearches:\n  - query: "${name} {n}"\n    limit: 1\n    matrix:\n      n: [${Array.from({ length: n }, (_, i) => i + 1).join(', ')}]\n`;

async function status(args: string[], settings: Settings) {
  const r = await runCli(['status', ...args], settings);
  expect(r.code).toBe(0);
  return r.stdout;
}

describe('harvest status says what is true', () => {
  it('counts the tasks whose calls are in flight as running', async () => {
    // An API that answers nothing until the test ends (its connections then close, and the
    // calls fail): the calls stay in flight however slowly the commands start.
    const api = await startMediaHost('127.0.0.1', () => {});
    undo.push(() => api.close());
    h = await startHarness();
    const { runId } = await startRun(h.runtime, h.writePipeline('busy', tasks('busy', 6)), {
      logger: h.logger,
    });
    await h.startPool({ concurrency: 4, settings: { apiUrl: api.url } });
    const { redis, keys } = h.runtime;
    await waitFor('4 calls in flight', () => redis.hlen(keys.inflight), { until: (n) => n === 4 });

    const text = await status([runId], h.settings);
    expect(text).toContain('  tasks    6: done 0, failed 0, retrying 0, queued 2, running 4');
    expect(text).toContain('  calls    0, credits used 0, 4 in flight');
    const json = JSON.parse(await status([runId, '--json'], h.settings));
    expect(json.tasks).toMatchObject({ queued: 2, running: 4, total: 6 });
    expect(json.callsInFlight).toBe(4);
  }, 60_000);

  it('an interrupted run is resumed, not waited on with `harvest worker`', async () => {
    h = await startHarness();
    const { runId } = await startRun(h.runtime, h.writePipeline('halt', tasks('halt', 3)), {
      logger: h.logger,
    });
    await stopRun(h.runtime, runId, 'interrupted');

    const text = await status([runId], h.settings);
    expect(text).toContain(`run ${runId} (halt): interrupted`);
    expect(text).not.toContain('start `harvest worker`');
    expect(text).not.toContain('  workers  ');
    // No worker is live: the resume works the run in the command itself.
    expect(text).toContain(
      `  resume   harvest run --resume ${runId} --local (or --wait, once \`harvest worker\` runs)`,
    );
  }, 60_000);

  it('a 402 reads as out of credits, with what to do, not as the API key', async () => {
    h = await startHarness({
      sandbox: { keys: [{ key: 'fc-poor', team: 'poor', credits: 0 }] },
      apiKey: 'fc-poor',
    });
    const { runId } = await startRun(h.runtime, h.writePipeline('poor', tasks('poor', 3)), {
      logger: h.logger,
    });
    await h.startPool({ concurrency: 1 });
    const paused = await waitForRun(h.runtime, runId, { pollMs: 50 });
    expect(paused.paused?.code).toBe('PAYMENT_REQUIRED');

    const list = await status([], h.settings);
    expect(list).toContain('running     poor  0/3 done, 0 failed');
    expect(list).toContain('(paused: out of credits)');
    expect(list).not.toContain('API key');
    expect(list).toContain(
      'search queue paused: out of credits (402 PAYMENT_REQUIRED): The account has no credits left',
    );
    expect(list).toContain('Add credits or upgrade the plan');

    const one = await status([runId], h.settings);
    expect(one).toContain(
      '  PAUSED   PAYMENT_REQUIRED (out of credits: every unfinished run waits): The account has no credits left',
    );
    expect(one).not.toContain('the API key');
    expect(one).toContain(`  resume   harvest run --resume ${runId}`);
  }, 60_000);

  it("prints the API's text with its control characters escaped; --json keeps it exact", async () => {
    // A service whose error text sets the terminal's title, clears the screen, returns to the
    // start of the line and forges a second one, and sends a one-character CSI (C1).
    const evil = '\u001b]0;owned\u0007\u001b[2J\rforged\nline \u009b31mred\u007f';
    const api = await startMediaHost('127.0.0.1', (_req, res) => {
      res.writeHead(402, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ success: false, error: evil }));
    });
    undo.push(() => api.close());
    h = await startHarness();
    const { runId } = await startRun(h.runtime, h.writePipeline('evil', tasks('evil', 2)), {
      logger: h.logger,
    });
    await h.startPool({ concurrency: 1, settings: { apiUrl: api.url } });
    await waitForRun(h.runtime, runId, { pollMs: 50 });

    const escaped = '\\x1b]0;owned\\x07\\x1b[2J\\rforged\\nline \\x9b31mred\\x7f';
    for (const text of [await status([runId], h.settings), await status([], h.settings)]) {
      expect(text).toContain(escaped);
      // Nothing a terminal obeys, and each line of harvest's own.
      // biome-ignore lint/suspicious/noControlCharactersInRegex: what must not be printed.
      expect(text.trimEnd()).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
      expect(text).not.toContain('\nline ');
    }
    const json = JSON.parse(await status([runId, '--json'], h.settings));
    expect(json.errors.recent[0].errorMessage).toContain(evil);
    expect(json.queuePaused.reason).toContain(evil);
  }, 60_000);
});
