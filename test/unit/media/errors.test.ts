import { describe, expect, it } from 'vitest';
import { asMediaError, errorForStatus, hostReason, MediaError } from '../../../src/media/errors.ts';
import { mediaErrorXml } from '../../../src/sandbox/media.ts';

describe('media errors', () => {
  it("reads the host's reason from a Cloud Storage XML error", () => {
    const body = mediaErrorXml(
      'ExpiredToken',
      'Invalid argument.',
      'Request has expired: 20261122T101500Z',
    );
    expect(hostReason(body)).toEqual({
      code: 'ExpiredToken',
      message: 'Invalid argument. Request has expired: 20261122T101500Z',
    });
    expect(hostReason('<html>nope</html>')).toEqual({});
  });

  it('400/401/403 ask for a fresh URL; 408/429/5xx are transient; other 4xx fail', () => {
    const e = errorForStatus(
      403,
      mediaErrorXml('SignatureDoesNotMatch', 'The signature is bad.'),
      undefined,
    );
    expect(e).toMatchObject({
      code: 'MEDIA_URL_REFUSED',
      next: 'reissue',
      status: 403,
      hostCode: 'SignatureDoesNotMatch',
    });
    expect(e.message).toBe('media host answered 403 SignatureDoesNotMatch: The signature is bad.');
    expect(errorForStatus(400, '', undefined).next).toBe('reissue');
    expect(errorForStatus(401, '', undefined).next).toBe('reissue');
    expect(errorForStatus(429, '', 2000)).toMatchObject({ next: 'retry', retryAfterMs: 2000 });
    expect(errorForStatus(503, '', undefined).next).toBe('retry');
    expect(errorForStatus(408, '', undefined).next).toBe('retry');
    expect(errorForStatus(404, '', undefined)).toMatchObject({
      code: 'MEDIA_HTTP_ERROR',
      next: 'fail',
    });
    expect(errorForStatus(410, '', undefined).next).toBe('fail');
  });

  it('transport errors are transient; a refused address fails', () => {
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    expect(asMediaError(reset)).toMatchObject({ code: 'MEDIA_TRANSIENT', next: 'retry' });
    expect(asMediaError(reset).message).toBe('download failed: ECONNRESET socket hang up');
    const refused = Object.assign(new Error('refused'), { code: 'MEDIA_ADDRESS_REFUSED' });
    expect(asMediaError(refused)).toMatchObject({ code: 'MEDIA_ADDRESS_REFUSED', next: 'fail' });
    const own = new MediaError('MEDIA_TOO_LARGE', 'big');
    expect(asMediaError(own)).toBe(own);
  });

  it('a full disk pauses the queue rather than spend attempts', () => {
    for (const code of ['ENOSPC', 'EDQUOT']) {
      const full = Object.assign(new Error(`${code}: no space left on device, write`), { code });
      expect(asMediaError(full)).toMatchObject({ code: 'MEDIA_DISK_FULL', next: 'pause' });
    }
    expect(new MediaError('MEDIA_INTERRUPTED', 'stopping').next).toBe('stop');
  });
});
