/**
 * The sandbox's world over real HTTP: POST /_sandbox/epoch moves it on, and the answers of the
 * same searches change as world.ts says (some results drop out and new ones appear, some move,
 * some pages change content), the same for two sandboxes of one seed, and back again when the
 * epoch is set back.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/index.ts';

const AUTH = { authorization: 'Bearer fc-sandbox', 'content-type': 'application/json' };
const JSON_TYPE = { 'content-type': 'application/json' };
const sandboxes: RunningSandbox[] = [];
afterEach(async () => {
  await Promise.all(sandboxes.splice(0).map((s) => s.close()));
});

async function start(options: Parameters<typeof startSandbox>[0] = {}) {
  const sandbox = await startSandbox({ port: 0, ...options });
  sandboxes.push(sandbox);
  return sandbox;
}

async function postJson(url: string, body: unknown, headers = JSON_TYPE) {
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

interface Doc {
  url: string;
  markdown?: string;
}

/** url -> markdown of the web results of 40 searches, and their positions. */
async function snapshot(sandbox: RunningSandbox) {
  const pages = new Map<string, { markdown: string | undefined; position: number }>();
  for (let i = 0; i < 40; i++) {
    const { status, json } = await postJson(
      `${sandbox.url}/v2/search`,
      { query: `epochs ${i}`, limit: 20, scrapeOptions: { formats: ['markdown'] } },
      AUTH,
    );
    expect(status).toBe(200);
    const web = ((json.data as { web?: Doc[] }).web ?? []) as Doc[];
    web.forEach((d, position) => {
      pages.set(`${i} ${d.url}`, { markdown: d.markdown, position });
    });
  }
  return pages;
}

describe('sandbox epochs over HTTP', () => {
  it('advancing an epoch drops, adds, moves and changes results; setting it back restores them', async () => {
    const sandbox = await start({ seed: 3 });
    expect((await (await fetch(`${sandbox.url}/_sandbox/epoch`)).json()) as unknown).toEqual({
      success: true,
      epoch: 0,
      shares: { content: 0.1, rank: 0.05, churn: 0.05 },
      content: 'short',
    });
    const first = await snapshot(sandbox);
    expect(await snapshot(sandbox)).toEqual(first);

    const advanced = await postJson(`${sandbox.url}/_sandbox/epoch`, {});
    expect(advanced).toEqual({ status: 200, json: { success: true, epoch: 1, previous: 0 } });
    const second = await snapshot(sandbox);
    let dropped = 0;
    let moved = 0;
    let changed = 0;
    for (const [key, before] of first) {
      const after = second.get(key);
      if (!after) dropped++;
      else {
        if (after.position !== before.position) moved++;
        if (before.markdown !== undefined && after.markdown !== undefined) {
          if (after.markdown !== before.markdown) changed++;
        }
      }
    }
    const appeared = [...second.keys()].filter((key) => !first.has(key)).length;
    expect(first.size).toBeGreaterThan(400);
    for (const count of [dropped, appeared, moved, changed]) {
      expect(count).toBeGreaterThan(0);
      expect(count).toBeLessThan(first.size * 0.25);
    }

    // Another sandbox of the same seed, started at epoch 1, answers the same.
    const twin = await start({ seed: 3, epoch: 1 });
    expect(await snapshot(twin)).toEqual(second);

    expect(await postJson(`${sandbox.url}/_sandbox/epoch`, { epoch: 0 })).toEqual({
      status: 200,
      json: { success: true, epoch: 0, previous: 1 },
    });
    expect(await snapshot(sandbox)).toEqual(first);
    expect(sandbox.control.advanceEpoch(3)).toBe(3);
    expect((await postJson(`${sandbox.url}/_sandbox/epoch`, { advance: 2 })).json.epoch).toBe(5);
  });

  it('refuses bad epoch bodies with a clear 400', async () => {
    const sandbox = await start();
    for (const body of [{ epoch: -1 }, { advance: 0 }, { epoch: 1, advance: 1 }, { epoch: 'x' }]) {
      const res = await postJson(`${sandbox.url}/_sandbox/epoch`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.success).toBe(false);
      expect(res.json.error).toEqual(expect.any(String));
    }
    expect(sandbox.control.epoch()).toBe(0);
  });
});
