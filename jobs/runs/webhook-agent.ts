/**
 * The HTTP agent of webhook deliveries: the media downloads' guarded agent (src/media/agent.ts)
 * with the webhooks' own allow-list. A `schedule.notify` URL is whatever a pipeline file says,
 * so it gets the address rule media URLs get: loopback (Redis on 127.0.0.1:6379), private,
 * link-local and cloud metadata addresses are refused, checked on the address connected to,
 * unless `HARVEST_NOTIFY_ALLOW_HOSTS` names the host. The API's host is not exempt here.
 */
import type { Agent } from 'undici';
import type { Settings } from '../../src/config.ts';
import { createGuardedAgent, type Resolve } from '../../src/media/agent.ts';
import { REFUSED_CODE } from '../../src/notify/deliver.ts';

export interface WebhookAgentOptions {
  /** Longest wait for a connection, in ms. Default 10000. */
  connectTimeoutMs?: number;
  /** Resolver of host names (tests). Default the system resolver. */
  resolve?: Resolve;
}

export function createWebhookAgent(
  settings: Pick<Settings, 'notifyAllowHosts'>,
  options: WebhookAgentOptions = {},
): Agent {
  return createGuardedAgent({
    allowedHosts: settings.notifyAllowHosts,
    connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
    wording: {
      code: REFUSED_CODE,
      what: 'webhook receivers',
      setting: 'HARVEST_NOTIFY_ALLOW_HOSTS',
    },
    ...(options.resolve ? { resolve: options.resolve } : {}),
  });
}
