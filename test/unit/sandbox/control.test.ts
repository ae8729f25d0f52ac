import { describe, expect, it } from 'vitest';
import { app, search } from './helpers.ts';

describe('ledger and control', () => {
  it('charges 200 answers only; a malformed 200 is charged and its body cut', async () => {
    const sandbox = app();
    const ok = (await search(sandbox, { query: 'charged', limit: 10 })).json();
    sandbox.sandbox.control.setFaults({ malformed: 1 });
    const bad = await search(sandbox, { query: 'charged', limit: 10 });
    expect(bad.status).toBe(200);
    expect(() => JSON.parse(bad.body)).toThrow();
    sandbox.sandbox.control.setFaults({ error500: 1 });
    expect((await search(sandbox, { query: 'charged' })).status).toBe(500);
    sandbox.sandbox.control.setFaults({});
    await search(sandbox, { query: 'x', limit: 0 });
    const team = sandbox.sandbox.ledger().teams.sandbox!;
    expect(team.calls).toEqual({ '200': 2, '400': 1, '500': 1 });
    expect(team.creditsCharged).toBe(2 * ok.creditsUsed);
    expect(team.creditsRemaining['fc-sandbox']).toBe(1_000_000 - 2 * ok.creditsUsed);
    sandbox.sandbox.control.resetLedger();
    expect(sandbox.sandbox.ledger().teams.sandbox?.calls).toEqual({});
    await sandbox.close();
  });

  it('the same controls over HTTP under /_sandbox', async () => {
    const sandbox = app();
    const post = (url: string, payload: object) => sandbox.inject({ method: 'POST', url, payload });
    expect((await post('/_sandbox/credits', { key: 'fc-sandbox', credits: 0 })).statusCode).toBe(
      200,
    );
    expect((await search(sandbox, { query: 'x' })).status).toBe(402);
    await post('/_sandbox/credits', { key: 'fc-sandbox', credits: 50 });
    expect((await post('/_sandbox/faults', { error500: 1 })).statusCode).toBe(200);
    expect((await search(sandbox, { query: 'x' })).status).toBe(500);
    expect((await post('/_sandbox/faults', { error500: 2 })).statusCode).toBe(400);
    await post('/_sandbox/faults', {});
    await post('/_sandbox/rate-limit', { perMinute: 1 });
    expect((await search(sandbox, { query: 'x' })).status).toBe(200);
    expect((await search(sandbox, { query: 'x' })).status).toBe(429);
    await post('/_sandbox/rate-limit', {});
    expect((await search(sandbox, { query: 'x' })).status).toBe(200);
    await post('/_sandbox/latency', { latency: { minMs: 100, maxMs: 100 } });
    expect((await search(sandbox, { query: 'x', timeout: 10 })).status).toBe(408);
    const ledger = (await sandbox.inject({ method: 'GET', url: '/_sandbox/ledger' })).json();
    expect(ledger).toEqual(sandbox.sandbox.ledger());
    expect(ledger.teams.sandbox.calls).toEqual({
      '200': 2,
      '402': 1,
      '408': 1,
      '429': 1,
      '500': 1,
    });
    await post('/_sandbox/ledger/reset', {});
    expect(sandbox.sandbox.ledger().teams.sandbox?.calls).toEqual({});
    expect((await post('/_sandbox/media-faults', { error503: 1 })).statusCode).toBe(200);
    const media = await sandbox.inject({ method: 'GET', url: '/media/x.png' });
    expect(media.statusCode).toBe(503);
    expect((await post('/_sandbox/media-faults', { tamper: -1 })).statusCode).toBe(400);
    expect((await post('/_sandbox/media-faults', {})).statusCode).toBe(200);
    expect((await sandbox.inject({ method: 'GET', url: '/media/x.png' })).statusCode).toBe(404);
    await sandbox.close();
  });

  it('max concurrency answers 429 while a request of the team is in flight', async () => {
    const sandbox = app({ maxConcurrency: 1, latency: { minMs: 100, maxMs: 100 } });
    const [a, b] = await Promise.all([
      search(sandbox, { query: 'a' }),
      search(sandbox, { query: 'b' }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 429]);
    expect((await search(sandbox, { query: 'c' })).status).toBe(200);
    await sandbox.close();
  });

  it('the same seed gives the same fault sequence', async () => {
    const statuses = async () => {
      const sandbox = app({ seed: 7, faults: { timeout408: 0.2, error500: 0.2, malformed: 0.2 } });
      const out: number[] = [];
      for (let i = 0; i < 30; i++) out.push((await search(sandbox, { query: `s${i}` })).status);
      await sandbox.close();
      return out;
    };
    const first = await statuses();
    expect(new Set(first).size).toBeGreaterThan(2);
    expect(await statuses()).toEqual(first);
  });
  it('POST /_sandbox/gc collects where the process exposes gc, and says whether it did', async () => {
    const sandbox = app();
    const res = await sandbox.inject({ method: 'POST', url: '/_sandbox/gc' });
    expect(res.statusCode).toBe(200);
    const exposed = typeof (globalThis as { gc?: unknown }).gc === 'function';
    expect(res.json()).toEqual({ success: true, collected: exposed });
    await sandbox.close();
  });
});
