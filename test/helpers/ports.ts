import { once } from 'node:events';
import { createServer } from 'node:net';

/** A TCP port that was free a moment ago on every address (loopback included). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '0.0.0.0');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  await once(server, 'close');
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}
