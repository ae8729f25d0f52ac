import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/index.ts';

const AUTH = { authorization: 'Bearer fc-sandbox', 'content-type': 'application/json' };
let sandbox: RunningSandbox | undefined;
afterEach(async () => {
  await sandbox?.close();
  sandbox = undefined;
});

const post = (url: string, body: unknown, headers: Record<string, string> = AUTH) =>
  fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });

describe('sandbox over real HTTP', () => {
  it('media URLs really expire with a tiny time scale', async () => {
    sandbox = await startSandbox({ port: 0, timeScale: 0.0003 }); // 1 h -> ceil(1.08) = 2 s
    let doc: { audio?: string; screenshot?: string } | undefined;
    for (let i = 0; i < 10 && !doc; i++) {
      const res = (await (
        await post(`${sandbox.url}/v2/search`, {
          query: `expiry ${i}`,
          scrapeOptions: { formats: ['audio', 'screenshot'] },
        })
      ).json()) as { data: { web?: Array<{ audio?: string; screenshot?: string }> } };
      doc = res.data.web?.find((d) => d.audio);
    }
    expect(doc?.audio?.startsWith(`${sandbox.url}/media/`)).toBe(true);
    expect(new URL(doc!.audio!).searchParams.get('X-Goog-Expires')).toBe('2');
    const fresh = await fetch(doc!.audio!);
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get('content-type')).toBe('audio/mpeg');
    expect((await fresh.arrayBuffer()).byteLength).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 3_100)); // fixed: past the URL's 2 s of life
    const expired = await fetch(doc!.audio!);
    expect(expired.status).toBe(400);
    expect(await expired.text()).toContain('<Code>ExpiredToken</Code>');
    expect((await fetch(doc!.screenshot!)).status).toBe(200); // 24 h -> 26 s
    expect(sandbox.ledger().media.withAuthorization).toBe(0);
  });

  it('a dropped connection gets no answer and is not charged', async () => {
    sandbox = await startSandbox({ port: 0, faults: { drop: 1 } });
    await expect(post(`${sandbox.url}/v2/search`, { query: 'drop' })).rejects.toThrow();
    const team = sandbox.ledger().teams.sandbox!;
    expect(team.dropped).toBe(1);
    expect(team.calls).toEqual({});
    expect(team.creditsCharged).toBe(0);
    // flipped over HTTP, as a test driving a worker in another process would
    await post(`${sandbox.url}/_sandbox/faults`, {}, { 'content-type': 'application/json' });
    expect((await post(`${sandbox.url}/v2/search`, { query: 'drop' })).status).toBe(200);
  });

  it('rate limit per team per minute', async () => {
    sandbox = await startSandbox({
      port: 0,
      rateLimitPerMinute: 3,
      keys: [
        { key: 'k1', team: 'one', credits: 1000 },
        { key: 'k2', team: 'two', credits: 1000 },
      ],
    });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      statuses.push(
        (
          await post(
            `${sandbox.url}/v2/search`,
            { query: 'r' },
            { ...AUTH, authorization: 'Bearer k1' },
          )
        ).status,
      );
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    const other = await post(
      `${sandbox.url}/v2/search`,
      { query: 'r' },
      { ...AUTH, authorization: 'Bearer k2' },
    );
    expect(other.status).toBe(200);
    const res = await post(
      `${sandbox.url}/v2/search`,
      { query: 'r' },
      { ...AUTH, authorization: 'Bearer k1' },
    );
    expect(res.headers.get('retry-after')).toBeNull();
    expect(((await res.json()) as { error: string }).error).toMatch(
      /Consumed \(req\/min\): 6, Remaining \(req\/min\): 0\. .*retry after \d+s, resets at /,
    );
    expect(sandbox.ledger().teams.one?.calls).toEqual({ '200': 3, '429': 3 });
  });

  it('`harvest sandbox --port 0` prints its address and key', async () => {
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const child = spawn(
      process.execPath,
      ['bin/harvest.js', 'sandbox', '--port', '0', '--keys', 'k-a:ta:10,k-b:tb:5:tp'],
      {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    try {
      let out = '';
      child.stdout.setEncoding('utf8');
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk: string) => {
          out += chunk;
          if (out.split('\n').length > 3) resolve();
        });
        child.once('exit', (code) => reject(new Error(`exited ${code}`)));
      });
      const lines = out.trim().split('\n');
      expect(lines[0]).toMatch(/^sandbox listening on http:\/\/127\.0\.0\.1:\d+$/);
      expect(lines.slice(1)).toEqual(['api key: k-a', 'api key: k-b']);
      const url = lines[0]!.replace('sandbox listening on ', '');
      const res = await fetch(`${url}/v2/crawl/active`, {
        headers: { authorization: 'Bearer k-a' },
      });
      expect(res.status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
    }
  });
});
