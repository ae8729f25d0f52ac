/**
 * The media downloader on real sockets: the sandbox's signed URLs, and small media hosts on
 * loopback addresses (127.0.0.2 stands for a host the address rule refuses; nothing here sends
 * traffic outside the loopback range).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createGuardedAgent, type Resolve } from '../../src/media/agent.ts';
import { createDownloader, type DownloadInput, HELD_BYTES_MAX } from '../../src/media/download.ts';
import { MediaError } from '../../src/media/errors.ts';
import { DownloadSlots } from '../../src/media/slots.ts';
import { mediaRoot, PARTIAL_DIR } from '../../src/media/storage.ts';
import { startSandbox } from '../../src/sandbox/index.ts';
import { mediaBytes } from '../../src/sandbox/media-bytes.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { startMediaHost } from '../helpers/media-host.ts';
import { tempDir } from '../helpers/tmp.ts';
import { waitFor } from '../helpers/wait.ts';

const defer = useCleanup();
const PNG = mediaBytes('screenshot', 'a test image');
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** `media.test` resolves to 127.0.0.2, `api.test` to 127.0.0.1; anything else fails. */
const resolve: Resolve = async (hostname) => {
  if (hostname === 'media.test') return [{ address: '127.0.0.2', family: 4 }];
  if (hostname === 'api.test') return [{ address: '127.0.0.1', family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
};

function setup(allowedHosts: string[] = ['127.0.0.1'], timeoutMs = 5000, slots?: DownloadSlots) {
  const tmp = tempDir('harvest-dl');
  defer(() => tmp.remove());
  const agent = createGuardedAgent({ allowedHosts, resolve });
  defer(() => agent.close());
  const downloader = createDownloader({
    agent,
    timeoutMs,
    maxRedirects: 3,
    ...(slots ? { slots } : {}),
  });
  const root = mediaRoot(tmp.dir, 'media');
  const input = (url: string, over: Partial<DownloadInput> = {}): DownloadInput => ({
    url,
    kind: 'screenshot',
    maxBytes: 1_000_000,
    dataDir: tmp.dir,
    root,
    owner: 'test-worker',
    ...over,
  });
  /** Partial files left (none when their folder was never made). */
  const partials = () => {
    const dir = path.join(root, PARTIAL_DIR);
    return fs.existsSync(dir) ? fs.readdirSync(dir).length : 0;
  };
  /** Files under the media folder this process still holds open (Linux's /proc). */
  const openFiles = () =>
    fs.readdirSync('/proc/self/fd').flatMap((fd) => {
      try {
        const target = fs.readlinkSync(`/proc/self/fd/${fd}`);
        return target.startsWith(root) ? [target] : [];
      } catch {
        return []; // closed meanwhile (the readdir's own descriptor)
      }
    });
  return { downloader, input, dir: tmp.dir, root, partials, openFiles };
}

async function refusal(p: Promise<unknown>): Promise<MediaError> {
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(MediaError);
  return error as MediaError;
}

async function signedUrls(timeScale = 1) {
  const sandbox = await startSandbox({ port: 0, timeScale });
  defer(() => sandbox.close());
  type Doc = { screenshot?: string; audio?: string; video?: string };
  // Some queries find nothing, and some scrapes fail: ask until a result carries media.
  for (let i = 0; ; i++) {
    const res = await fetch(`${sandbox.url}/v2/search`, {
      method: 'POST',
      headers: { authorization: 'Bearer fc-sandbox', 'content-type': 'application/json' },
      body: JSON.stringify({
        query: `media download test ${i}`,
        limit: 5,
        scrapeOptions: { formats: ['screenshot', 'audio', 'video'] },
      }),
    });
    const body = (await res.json()) as { data: { web?: Doc[] } };
    const doc = body.data.web?.find((d) => d.screenshot);
    if (doc) return { sandbox, doc: doc as Required<Doc> };
  }
}

describe('media downloads', () => {
  it("saves the sandbox's files content-addressed, with the hash it served, never sending Authorization", async () => {
    const { sandbox, doc } = await signedUrls();
    const { downloader, input, dir, partials, openFiles } = setup();
    const saved = [];
    for (const [kind, url] of [
      ['screenshot', doc.screenshot],
      ['audio', doc.audio],
      ['video', doc.video],
    ] as const) {
      saved.push(await downloader.download(input(url, { kind })));
    }
    const served = sandbox.ledger().media;
    expect(served.withAuthorization).toBe(0);
    expect(saved.map((s) => s.contentType)).toEqual(['image/png', 'audio/mpeg', 'video/mp4']);
    for (const s of saved) {
      const name = `${s.sha256}`;
      expect(s.relPath).toBe(`media/${name.slice(0, 2)}/${name}.${s.relPath.split('.').pop()}`);
      const bytes = fs.readFileSync(path.join(dir, s.relPath));
      expect(sha(bytes)).toBe(s.sha256);
      expect(bytes.length).toBe(s.bytes);
      expect(Object.values(served.served)).toContain(s.sha256);
    }
    // The same bytes again: stored once.
    const again = await downloader.download(input(doc.screenshot));
    expect(again).toMatchObject({ sha256: saved[0]!.sha256, existed: true });
    expect(partials()).toBe(0);
    expect(openFiles()).toEqual([]);
  });

  it('sends only User-Agent and Accept', async () => {
    const host = await startMediaHost('127.0.0.1', (_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
    });
    defer(() => host.close());
    const { downloader, input } = setup();
    await downloader.download(input(`${host.url}/a.png?sig=1`));
    const headers = host.requests[0]!.headers;
    expect(headers.authorization).toBeUndefined();
    expect(Object.keys(headers).sort()).toEqual(['accept', 'connection', 'host', 'user-agent']);
  });

  it('refuses a host on a refused address without connecting: IP literal, a name resolving there, a redirect hop', async () => {
    const refused = await startMediaHost('127.0.0.2', (_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
    });
    defer(() => refused.close());
    const redirector = await startMediaHost('127.0.0.1', (_req, res) => {
      res.writeHead(302, { location: `${refused.url}/hop.png` }).end();
    });
    defer(() => redirector.close());
    const { downloader, input, partials } = setup(['127.0.0.1']);

    const literal = await refusal(downloader.download(input(`${refused.url}/a.png`)));
    expect(literal).toMatchObject({ code: 'MEDIA_ADDRESS_REFUSED', next: 'fail' });
    expect(literal.message).toContain('loopback');
    const named = await refusal(
      downloader.download(input(`http://media.test:${refused.port}/b.png`)),
    );
    expect(named.code).toBe('MEDIA_ADDRESS_REFUSED');
    expect(named.message).toContain('media.test (127.0.0.2)');
    const hop = await refusal(downloader.download(input(`${redirector.url}/start.png`)));
    expect(hop.code).toBe('MEDIA_ADDRESS_REFUSED');
    expect(redirector.requests).toHaveLength(1);
    expect(refused.connections).toBe(0);
    expect(partials()).toBe(0);
  });

  it('fetches from a refused range when the setting allows the host', async () => {
    const host = await startMediaHost('127.0.0.2', (_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
    });
    defer(() => host.close());
    const { downloader, input } = setup(['127.0.0.1', 'media.test']);
    const saved = await downloader.download(input(`http://media.test:${host.port}/ok.png`));
    expect(saved.sha256).toBe(sha(PNG));
    expect(host.requests).toHaveLength(1);
  });

  it('caps redirects and size, checks types, refuses other schemes, reads expiry refusals', async () => {
    const host = await startMediaHost('127.0.0.1', (req, res) => {
      if (req.url?.startsWith('/loop')) res.writeHead(301, { location: '/loop' }).end();
      else if (req.url === '/html')
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html>');
      else if (req.url === '/lying') res.writeHead(200, { 'content-type': 'image/jpeg' }).end(PNG);
      else if (req.url === '/chunked-big') {
        res.writeHead(200, { 'content-type': 'image/png' });
        res.write(PNG);
        res.end(Buffer.alloc(5000));
      } else {
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': PNG.length }).end(PNG);
      }
    });
    defer(() => host.close());
    const { downloader, input, partials, openFiles } = setup();
    expect(await refusal(downloader.download(input(`${host.url}/loop`)))).toMatchObject({
      code: 'MEDIA_REDIRECT_REFUSED',
      message: 'more than 3 redirects',
    });
    expect(host.requests.filter((r) => r.url === '/loop')).toHaveLength(4);
    expect(
      await refusal(downloader.download(input(`${host.url}/x.png`, { maxBytes: 50 }))),
    ).toMatchObject({
      code: 'MEDIA_TOO_LARGE',
      message: expect.stringContaining('Content-Length'),
    });
    expect(
      await refusal(downloader.download(input(`${host.url}/chunked-big`, { maxBytes: 2000 }))),
    ).toMatchObject({ code: 'MEDIA_TOO_LARGE', next: 'fail' });
    expect(await refusal(downloader.download(input(`${host.url}/html`)))).toMatchObject({
      code: 'MEDIA_TYPE_REFUSED',
    });
    expect(await refusal(downloader.download(input(`${host.url}/lying`)))).toMatchObject({
      code: 'MEDIA_TYPE_REFUSED',
      message: 'the host declared image/jpeg but the file is png',
    });
    expect(
      await refusal(downloader.download(input(`${host.url}/x.png`, { kind: 'audio' }))),
    ).toMatchObject({ code: 'MEDIA_TYPE_REFUSED' });
    // Refused bodies leave no partial file behind, and no descriptor open on one.
    expect(partials()).toBe(0);
    expect(openFiles()).toEqual([]);
    for (const url of [
      'file:///etc/passwd',
      'ftp://127.0.0.1/x',
      `http://u:p@127.0.0.1:${host.port}/`,
    ]) {
      expect(await refusal(downloader.download(input(url)))).toMatchObject({
        code: 'MEDIA_URL_INVALID',
      });
    }
  });

  it('refuses for good a redirect to a Location that is not a URL', async () => {
    const host = await startMediaHost('127.0.0.1', (_req, res) => {
      res.writeHead(302, { location: 'http://[::1' }).end();
    });
    defer(() => host.close());
    const { downloader, input } = setup();
    // A plain TypeError was taken as transient, and retried with backoff six times.
    expect(await refusal(downloader.download(input(`${host.url}/start.png`)))).toMatchObject({
      code: 'MEDIA_REDIRECT_REFUSED',
      next: 'fail',
      message: 'redirect 302 to a Location that is not a URL: http://[::1',
    });
  });

  it('a file that cannot be moved into place leaves no partial file behind', async () => {
    const host = await startMediaHost('127.0.0.1', (_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
    });
    defer(() => host.close());
    const { downloader, input, root, partials, openFiles } = setup();
    // A folder where the file belongs: the rename fails.
    const target = path.join(root, sha(PNG).slice(0, 2), `${sha(PNG)}.png`);
    fs.mkdirSync(path.join(target, 'in-the-way'), { recursive: true });
    await refusal(downloader.download(input(`${host.url}/a.png`)));
    expect(partials()).toBe(0);
    expect(openFiles()).toEqual([]);
  });

  it('writes a body larger than it holds in memory as it comes, and drops it when it outgrows the cap', async () => {
    const piece = Buffer.alloc(1000, 7);
    const pieces = Math.ceil((HELD_BYTES_MAX * 2.5) / piece.length);
    const body = Buffer.concat([PNG, ...Array.from({ length: pieces }, () => piece)]);
    const host = await startMediaHost('127.0.0.1', (_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.write(PNG);
      let sent = 0;
      const more = () => {
        while (sent < pieces) {
          sent += 1;
          if (!res.write(piece)) return void res.once('drain', more);
        }
        res.end();
      };
      more();
    });
    defer(() => host.close());
    const { downloader, input, dir, partials, openFiles } = setup();
    const saved = await downloader.download(input(`${host.url}/big.png`, { maxBytes: 10e6 }));
    expect(saved.bytes).toBe(body.length);
    expect(saved.sha256).toBe(sha(body));
    expect(fs.readFileSync(path.join(dir, saved.relPath)).equals(body)).toBe(true);
    // Refused past the cap once it is being written: the partial file goes.
    const capped = downloader.download(input(`${host.url}/big.png`, { maxBytes: 2e6 }));
    expect(await refusal(capped)).toMatchObject({ code: 'MEDIA_TOO_LARGE' });
    expect(partials()).toBe(0);
    expect(openFiles()).toEqual([]);
  });

  it('a body cut off or stalled midway is a transient failure that leaves no partial file', async () => {
    const big = Buffer.alloc(HELD_BYTES_MAX * 2, 7);
    const host = await startMediaHost('127.0.0.1', (req, res) => {
      res.writeHead(200, {
        'content-type': 'image/png',
        'content-length': PNG.length + big.length,
      });
      res.write(PNG);
      // '/cut-small': the body ends before anything is written to a file; '/cut-big': once a
      // partial file is being written; '/stall': never sends the rest.
      if (req.url === '/cut-small') setTimeout(() => res.socket?.destroy(), 50);
      else if (req.url === '/cut-big')
        res.write(big.subarray(0, HELD_BYTES_MAX + 4096), () =>
          setTimeout(() => res.socket?.destroy(), 50),
        );
    });
    defer(() => host.close());
    const { downloader, input, partials, openFiles } = setup(['127.0.0.1'], 300);
    for (const url of ['/cut-small', '/cut-big', '/stall']) {
      const failed = await refusal(
        downloader.download(input(`${host.url}${url}`, { maxBytes: 10e6 })),
      );
      expect(failed, url).toMatchObject({ next: 'retry' });
    }
    expect(partials()).toBe(0);
    expect(openFiles()).toEqual([]);
  });

  it('an expired URL is refused by the host with ExpiredToken; a tampered one with SignatureDoesNotMatch', async () => {
    const { doc } = await signedUrls(0.0005); // audio lives 2 s
    const { downloader, input } = setup();
    const tampered = doc.screenshot.replace(/X-Goog-Signature=[0-9a-f]/, 'X-Goog-Signature=z');
    expect(await refusal(downloader.download(input(tampered)))).toMatchObject({
      code: 'MEDIA_URL_REFUSED',
      next: 'reissue',
      status: 403,
      hostCode: 'SignatureDoesNotMatch',
    });
    await new Promise((r) => setTimeout(r, 2100)); // fixed: past the audio URL's 2 s of life
    const expired = await refusal(downloader.download(input(doc.audio, { kind: 'audio' })));
    expect(expired).toMatchObject({ status: 400, hostCode: 'ExpiredToken', next: 'reissue' });
    expect(expired.message).toMatch(
      /^media host answered 400 ExpiredToken: Invalid argument\. Request has expired/,
    );
  });

  it('transient: 503 with Retry-After, a reset connection, a host that never answers', async () => {
    const host = await startMediaHost('127.0.0.1', (req, res) => {
      if (req.url === '/busy') res.writeHead(503, { 'retry-after': '2' }).end();
      else if (req.url === '/reset') res.socket?.destroy();
      // '/silent': never answers.
    });
    defer(() => host.close());
    const { downloader, input } = setup(['127.0.0.1'], 300);
    expect(await refusal(downloader.download(input(`${host.url}/busy`)))).toMatchObject({
      code: 'MEDIA_TRANSIENT',
      next: 'retry',
      retryAfterMs: 2000,
    });
    expect(await refusal(downloader.download(input(`${host.url}/reset`)))).toMatchObject({
      next: 'retry',
    });
    const silent = await refusal(downloader.download(input(`${host.url}/silent`)));
    expect(silent).toMatchObject({ next: 'retry' });
    expect(silent.message).toMatch(/timeout/i);
  });

  it('holds a download slot from the request to the last byte, and gives it back on a refusal', async () => {
    let finishSlow: () => void = () => {};
    const host = await startMediaHost('127.0.0.1', (req, res) => {
      if (req.url === '/missing') {
        res.writeHead(404).end('no such file');
        return;
      }
      res.writeHead(200, { 'content-type': 'image/png' });
      if (req.url !== '/slow') {
        res.end(PNG);
        return;
      }
      res.write(PNG.subarray(0, 100));
      finishSlow = () => res.end(PNG.subarray(100));
    });
    defer(() => host.close());
    const slots = new DownloadSlots(1);
    const { downloader, input, partials } = setup(['127.0.0.1'], 5000, slots);
    const slow = downloader.download(input(`${host.url}/slow`));
    await waitFor('the slow download to ask the host', () => host.requests.length === 1);
    const fast = downloader.download(input(`${host.url}/fast`));
    // The one slot is taken by a body still arriving: the next download has not asked yet
    // (a fixed duration: nothing is to happen over a while).
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(host.requests.map((r) => r.url)).toEqual(['/slow']);
    expect(slots.waiting).toBe(1);
    finishSlow();
    const [a, b] = await Promise.all([slow, fast]);
    expect(a.sha256).toBe(sha(PNG));
    expect(b.sha256).toBe(sha(PNG));
    expect(slots.busy).toBe(0);
    expect(await refusal(downloader.download(input(`${host.url}/missing`)))).toMatchObject({
      next: 'fail',
    });
    expect(slots.busy).toBe(0);
    expect(partials()).toBe(0);
  });
});
