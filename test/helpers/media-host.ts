/**
 * A small HTTP server standing in for a media host, on a loopback address of the test's
 * choosing (127.0.0.2 is loopback too on Linux): it answers with a handler and records every
 * connection and request, so a test can show that a refused host got no traffic at all.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MediaHost {
  /** `http://HOST:PORT` */
  url: string;
  port: number;
  connections: number;
  requests: Array<{ url: string; headers: IncomingMessage['headers'] }>;
  close(): Promise<void>;
}

export async function startMediaHost(
  host: string,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<MediaHost> {
  const state = { connections: 0, requests: [] as MediaHost['requests'] };
  const server = createServer((req, res) => {
    state.requests.push({ url: req.url ?? '', headers: req.headers });
    handler(req, res);
  });
  server.on('connection', () => {
    state.connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    port,
    get connections() {
      return state.connections;
    },
    requests: state.requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
