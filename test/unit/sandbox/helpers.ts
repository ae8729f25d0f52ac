import { buildSandboxApp, type SandboxOptions } from '../../../src/sandbox/index.ts';

export const KEY = 'fc-sandbox';
export const AUTH = { authorization: `Bearer ${KEY}` };

export function app(options: SandboxOptions = {}) {
  return buildSandboxApp(options);
}

export async function search(sandbox: ReturnType<typeof app>, body: unknown, headers = AUTH) {
  const res = await sandbox.inject({
    method: 'POST',
    url: '/v2/search',
    headers,
    payload: body as object,
  });
  return { status: res.statusCode, headers: res.headers, body: res.body, json: () => res.json() };
}
