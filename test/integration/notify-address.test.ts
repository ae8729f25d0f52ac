/**
 * Webhooks under the address rule, and what their attempts keep: receivers and stand-ins for
 * Redis on loopback addresses (127.0.0.2 stands for a host the rule refuses), deliveries through
 * sendNotification and the runs role's agent on a real database, and the CLI's `status` and
 * `schedule ls` on a URL that carries a token. Nothing here sends traffic outside loopback:
 * the metadata and NAT64 addresses are refused before any connection.
 */
import { type AddressInfo, createServer as createTcpServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createWebhookAgent } from '../../jobs/runs/webhook-agent.ts';
import type { Resolve } from '../../src/media/agent.ts';
import { sendNotification } from '../../src/notify/send.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { runCli } from '../helpers/cli.ts';
import { startHarness } from '../helpers/harness.ts';
import { startMediaHost } from '../helpers/media-host.ts';
import { applySchedule, runsQueue } from '../helpers/schedule.ts';

const defer = useCleanup();
const SECRET = 'test-secret-0123456789abcdef';
const TOKEN = 'tok-s3cr3t-0123456789';

/** A TCP listener that only counts connections: Redis, or anything else that is not a receiver. */
async function listener(host: string) {
  let connections = 0;
  const server = createTcpServer((socket) => {
    connections++;
    socket.end('-ERR unknown command\r\n');
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  defer(() => new Promise((resolve) => server.close(resolve)));
  const { port } = server.address() as AddressInfo;
  return { port, connections: () => connections };
}

/** An HTTP receiver answering `status` with `body`; the requests it got. */
async function receiver(status: number, body = '') {
  const host = await startMediaHost('127.0.0.1', (req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(status).end(body));
  });
  defer(() => host.close());
  return { port: host.port, url: `${host.url}/hook`, got: host.requests };
}

/**
 * A finished scheduled run whose webhook is `url`, and one delivery attempt through the agent
 * a worker of the runs role would use, with HARVEST_NOTIFY_ALLOW_HOSTS as given.
 */
async function finishedRun(url: string, allow?: string, resolve?: Resolve) {
  const h = await startHarness(allow ? { env: { HARVEST_NOTIFY_ALLOW_HOSTS: allow } } : {});
  defer(() => h.stop());
  const dispatcher = createWebhookAgent(h.settings, resolve ? { resolve } : {});
  defer(() => dispatcher.close());
  const store = h.runtime.store;
  const pipelineId = store.pipelines.upsert({ name: 'addr', hash: 'h1', yamlText: 'name: addr' });
  const runId = '20261126T000000-adr1';
  store.runs.create({ id: runId, pipelineId, trigger: 'schedule', taskCount: 0 });
  store.notifications.ensure(runId, url);
  store.runs.setStatus(runId, 'completed');
  const send = () =>
    sendNotification(store, runId, {
      secret: SECRET,
      final: false,
      timeoutMs: 2000,
      maxNewResults: 1000,
      logger: h.logger,
      dispatcher,
    });
  return { h, store, runId, send };
}

describe('webhooks under the address rule', () => {
  it('refuses a loopback receiver (Redis, say) without connecting: failed at once, saying why', async () => {
    const redis = await listener('127.0.0.1');
    const { send, store, runId } = await finishedRun(`http://127.0.0.1:${redis.port}/`);
    const r = await send();
    expect(redis.connections()).toBe(0);
    // Another attempt would be refused the same: given up at once, not retried for 40 minutes.
    expect(r).toMatchObject({ state: 'failed', status: null });
    expect(r.error).toBe(
      `refused to connect to 127.0.0.1 (127.0.0.1): loopback addresses are not webhook receivers; allow the host with HARVEST_NOTIFY_ALLOW_HOSTS if it is yours`,
    );
    expect(store.notifications.get(runId)).toMatchObject({ state: 'failed', attempts: 1 });
  });

  it('checks the address connected to: a name resolving to a refused address is refused', async () => {
    const refused = await listener('127.0.0.2');
    const resolve: Resolve = async (name) => {
      if (name !== 'hooks.test') throw new Error(`unexpected lookup of ${name}`);
      return [{ address: '127.0.0.2', family: 4 }];
    };
    // Allowing the literal 127.0.0.2 would not exempt a name that resolves to it.
    const { send } = await finishedRun(`http://hooks.test:${refused.port}/`, '127.0.0.1', resolve);
    const r = await send();
    expect(refused.connections()).toBe(0);
    expect(r.state).toBe('failed');
    expect(r.error).toContain('refused to connect to hooks.test (127.0.0.2): loopback addresses');
  });

  it('refuses metadata, IPv4-mapped and local-use NAT64 literals before connecting', async () => {
    const targets: [string, string][] = [
      ['http://169.254.169.254/latest/meta-data/', 'metadata'],
      ['http://[::ffff:169.254.169.254]/', 'metadata'],
      ['http://[::ffff:0:a9fe:a9fe]/', 'metadata'],
      ['http://[64:ff9b:1::a00:1]/', 'private'],
    ];
    for (const [url, range] of targets) {
      const { send } = await finishedRun(url);
      const started = Date.now();
      const r = await send();
      expect(r.state, url).toBe('failed');
      expect(r.error, url).toContain(`: ${range} addresses are not webhook receivers`);
      expect(Date.now() - started, url).toBeLessThan(1000);
    }
  });

  it('delivers where HARVEST_NOTIFY_ALLOW_HOSTS allows, on the port it names only', async () => {
    const allowed = await receiver(204);
    const other = await receiver(204);
    const first = await finishedRun(allowed.url, `127.0.0.1:${allowed.port}`);
    expect(await first.send()).toMatchObject({ state: 'delivered', status: 204 });
    expect(allowed.got).toHaveLength(1);
    const second = await finishedRun(other.url, `127.0.0.1:${allowed.port}`);
    expect(await second.send()).toMatchObject({ state: 'failed', status: null });
    expect(other.got).toHaveLength(0);
  });

  it("keeps the status only, never the receiver's text; logs mask the URL's token", async () => {
    const page = 'ERR secret-page-text \x1b]0;pwned\x07\x1b[2J';
    const hook = await receiver(500, page);
    const url = `${hook.url}?token=${TOKEN}&channel=ops`;
    const { send, store, runId, h } = await finishedRun(url, '127.0.0.1');
    const r = await send();
    expect(r).toMatchObject({ state: 'pending', status: 500, error: 'the receiver answered 500' });
    // The receiver was sent the URL as written: only what is printed is masked.
    expect(hook.got[0]?.url).toBe(`/hook?token=${TOKEN}&channel=ops`);
    expect(store.notifications.get(runId)?.lastError).toBe('the receiver answered 500');
    expect(store.notifications.attempts(runId).map((a) => a.error)).toEqual([
      'the receiver answered 500',
    ]);
    const logs = h.logs();
    expect(logs).toContain('notification not delivered');
    expect(logs).toContain(`/hook?token=***&channel=***`);
    expect(logs).not.toContain(TOKEN);
    expect(logs).not.toContain('secret-page-text');
  });
});

describe('a webhook URL with a token, as the CLI prints it', () => {
  it('status and schedule ls mask its query values, as text and as JSON', async () => {
    const hook = await receiver(204);
    const url = `${hook.url}?token=${TOKEN}`;
    const { h, runId } = await finishedRun(url, '127.0.0.1');
    const queue = runsQueue(h);
    defer(() => queue.close());
    const file = h.writePipeline(
      'masked',
      `name: masked\nsearches:\n  - query: "q"\nschedule:\n  cron: "0 6 * * 1"\n  notify: ${url}\n`,
    );
    await applySchedule(queue, file);
    const outputs = await Promise.all([
      runCli(['status', runId], h.settings),
      runCli(['status', runId, '--json'], h.settings),
      runCli(['schedule', 'ls'], h.settings),
      runCli(['schedule', 'ls', '--json'], h.settings),
    ]);
    const masked = `${hook.url}?token=***`;
    for (const out of outputs) {
      expect(out.code, out.stderr).toBe(0);
      expect(out.stdout + out.stderr).not.toContain(TOKEN);
      expect(out.stdout).toContain(masked);
    }
    const status = JSON.parse(outputs[1]!.stdout) as { notification: { url: string } };
    expect(status.notification.url).toBe(masked);
    const [schedule] = JSON.parse(outputs[3]!.stdout) as { notify: string }[];
    expect(schedule?.notify).toBe(masked);
  }, 60_000);
});
