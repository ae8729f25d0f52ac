/** Serves a worker's metrics at `/metrics` as Prometheus text (node:http). */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HarvestError } from '../errors.ts';
import type { Logger } from '../log.ts';

export interface MetricsText {
  readonly contentType: string;
  text(): Promise<string>;
}

export interface MetricsServer {
  /** `http://host:port/metrics`. */
  readonly url: string;
  close(): Promise<void>;
}

export async function serveMetrics(
  metrics: MetricsText,
  options: { host: string; port: number; logger: Logger },
): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('harvest serves GET /metrics\n');
      return;
    }
    metrics.text().then(
      (body) => res.writeHead(200, { 'content-type': metrics.contentType }).end(body),
      (error: unknown) => {
        options.logger.error({ err: error }, 'metrics could not be collected');
        res
          .writeHead(500, { 'content-type': 'text/plain' })
          .end('metrics could not be collected\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      const where = `${options.host}:${options.port}`;
      const why =
        error.code === 'EADDRINUSE'
          ? `port ${where} is in use: choose another --metrics-port`
          : `cannot serve metrics on ${where}: ${error.message}`;
      reject(new HarvestError('METRICS_LISTEN_FAILED', why, { cause: error, exitCode: 3 }));
    });
    server.listen(options.port, options.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
