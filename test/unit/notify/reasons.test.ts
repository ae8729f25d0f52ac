/** What a webhook attempt records when no answer came: harvest's words, never the receiver's. */
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../../src/config.ts';
import { noAnswerReason } from '../../../src/notify/deliver.ts';

const err = (message: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(message), extra);

describe('noAnswerReason', () => {
  it('names the error by its code, never by its message', () => {
    const parse = err('Response does not match the HTTP/1.1 protocol (\x1b]0;pwned\x07 leaked)', {
      code: 'HPE_INVALID_CONSTANT',
    });
    expect(noAnswerReason(parse, 1000)).toBe('no answer from the receiver: HPE_INVALID_CONSTANT');
    expect(
      noAnswerReason(err('connect ECONNREFUSED 10.0.0.5:80', { code: 'ECONNREFUSED' }), 1000),
    ).toBe('no answer from the receiver: connection refused (ECONNREFUSED)');
    expect(noAnswerReason(err('fetch failed', { cause: { code: 'ENOTFOUND' } }), 1000)).toBe(
      'no answer from the receiver: no such host (ENOTFOUND)',
    );
    expect(noAnswerReason(err('whatever the receiver said'), 1000)).toBe(
      'no answer from the receiver: the request failed',
    );
    expect(noAnswerReason(err('x', { code: 'not a code: <html>' }), 1000)).toBe(
      'no answer from the receiver: the request failed',
    );
  });

  it('says a timeout with the time waited', () => {
    const timeout = err('The operation was aborted due to timeout', { name: 'TimeoutError' });
    expect(noAnswerReason(timeout, 800)).toBe('no answer from the receiver within 800 ms');
    expect(noAnswerReason(err('x', { code: 'UND_ERR_HEADERS_TIMEOUT' }), 800)).toBe(
      'no answer from the receiver within 800 ms',
    );
  });

  it("quotes the address rule's refusal, which harvest wrote", () => {
    const refusal = err(
      'refused to connect to 127.0.0.1 (127.0.0.1): loopback addresses are not webhook receivers; allow the host with HARVEST_NOTIFY_ALLOW_HOSTS if it is yours',
      { code: 'NOTIFY_ADDRESS_REFUSED' },
    );
    expect(noAnswerReason(refusal, 1000)).toBe(refusal.message);
  });
});

describe('HARVEST_NOTIFY_ALLOW_HOSTS', () => {
  it('is empty by default, and separate from the media list', () => {
    expect(loadSettings({}).notifyAllowHosts).toEqual([]);
    const s = loadSettings({
      HARVEST_NOTIFY_ALLOW_HOSTS: 'hooks.internal, 10.0.0.5:8080 ,[::1]:9000',
      HARVEST_MEDIA_ALLOW_HOSTS: 'media.internal',
    });
    expect(s.notifyAllowHosts).toEqual(['hooks.internal', '10.0.0.5:8080', '[::1]:9000']);
    expect(s.media.allowHosts).toEqual(['media.internal']);
  });

  it('refuses what is not a host list, naming the variable', () => {
    expect(() => loadSettings({ HARVEST_NOTIFY_ALLOW_HOSTS: 'https://hooks.example/' })).toThrow(
      /HARVEST_NOTIFY_ALLOW_HOSTS/,
    );
  });
});
