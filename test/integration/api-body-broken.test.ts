/**
 * An answer whose status line and headers arrived but whose body then failed keeps its status:
 * the call is recorded with it (an error answer at no cost), not as if no answer came.
 */
import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type ApiError, createApiClient } from '../../src/api/index.ts';
import { failedCallEvent } from '../../src/events/call.ts';

const KEY = 'fc-test-key-0123456789abcdef';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function serve(handler: (res: ServerResponse) => void): Promise<string> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => handler(res));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function searchError(url: string): Promise<ApiError> {
  const api = createApiClient({ baseUrl: url, apiKey: KEY });
  cleanups.push(() => api.close());
  try {
    await api.search({ query: 'q' });
  } catch (error) {
    return error as ApiError;
  }
  throw new Error('the search should have failed');
}

describe('status of an answer whose body could not be read', () => {
  it('keeps the 503 of a 5xx answer whose body was cut short, and records it at no cost', async () => {
    const url = await serve((res) => {
      res.writeHead(503, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"success":false,');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const error = await searchError(url);
    // The service answered 503: the status line arrived before the body broke.
    expect(error.status).toBe(503);
    const call = failedCallEvent(error, {
      callId: 'c1',
      runId: 'r1',
      taskKey: 't1',
      attempt: 1,
      startedAt: Date.now(),
    });
    expect(call.status).toBe(503);
    // An error answer costs nothing (call-events.ts knownCost); with the status lost the call
    // counts as "cost unknown" and keeps its worst case reserved against the budget.
    expect(call.creditsUsed).toBe(0);
  });

  it('keeps the 200 of a success answer whose body was cut short', async () => {
    const url = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"success":true,');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const error = await searchError(url);
    expect(error.code).toBe('NETWORK');
    expect(error.status).toBe(200);
  });
});
