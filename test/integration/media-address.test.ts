/**
 * The API's own host is exempt from the media address rule on the API's port only: the guarded
 * agent as the media role makes it, against two servers on 127.0.0.1 (the "API", and another
 * service on the same host that no media URL may reach).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { originEntry } from '../../src/media/address.ts';
import { createGuardedAgent } from '../../src/media/agent.ts';
import { useCleanup } from '../helpers/cleanup.ts';

const defer = useCleanup();

async function server() {
  let connections = 0;
  const s = createServer((_req, res) => res.writeHead(200).end('media'));
  s.on('connection', () => {
    connections++;
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  defer(
    () =>
      new Promise((resolve) => {
        s.closeAllConnections();
        s.close(resolve);
      }),
  );
  const { port } = s.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, connections: () => connections };
}

describe("the API host's exemption from the media address rule", () => {
  it("covers the API's port, not the other ports of its host", async () => {
    const api = await server();
    const other = await server();
    const agent = createGuardedAgent({ allowedHosts: [originEntry(api.url)] });
    defer(() => agent.close());
    const fromApi = await request(`${api.url}media/a.png`, { dispatcher: agent });
    expect(fromApi.statusCode).toBe(200);
    await fromApi.body.text();
    const refused = await request(`${other.url}media/a.png`, { dispatcher: agent }).then(
      () => undefined,
      (error: unknown) => error as { code?: string; message?: string },
    );
    expect(refused?.code).toBe('MEDIA_ADDRESS_REFUSED');
    expect(refused?.message).toContain('loopback addresses are not media hosts');
    expect(other.connections()).toBe(0);
  });

  it('exempts every port of a host the setting names without one', async () => {
    const other = await server();
    const agent = createGuardedAgent({ allowedHosts: ['127.0.0.1'] });
    defer(() => agent.close());
    const answer = await request(other.url, { dispatcher: agent });
    expect(answer.statusCode).toBe(200);
    await answer.body.text();
  });
});
