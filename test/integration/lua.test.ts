import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { evalScript } from '../../src/queue/lua.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { testRedis } from '../helpers/redis.ts';
import { waitFor } from '../helpers/wait.ts';

const defer = useCleanup();

describe('evalScript', () => {
  it('runs a script Redis has never seen (sent once), then by its SHA-1 alone', async () => {
    const { prefix, redis } = testRedis(defer);
    // A script no server has cached yet: its text is unique to this test.
    const script = `-- ${randomUUID()}\nreturn redis.call('INCRBY', KEYS[1], ARGV[1])`;
    const key = `${prefix}:lua`;
    const sent: string[] = [];
    const marker = `${prefix}:seen`;
    let markerSeen = false;
    const monitor = await redis.duplicate().monitor();
    defer(() => monitor.disconnect());
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[3] === key) sent.push(String(args[0]).toLowerCase());
      if (String(args[0]).toLowerCase() === 'echo' && args[1] === marker) markerSeen = true;
    });
    expect(await evalScript(redis, script, 1, key, 2)).toBe(2);
    expect(await evalScript(redis, script, 1, key, 3)).toBe(5);
    // The monitor shows commands in order: once it shows this one, it has shown the scripts.
    await redis.echo(marker);
    await waitFor('the monitor to show the commands sent', () => markerSeen);
    // NOSCRIPT, then the text once; after that the SHA-1 only.
    expect(sent).toEqual(['evalsha', 'eval', 'evalsha']);
  });

  it("passes a script's own error through", async () => {
    const { prefix, redis } = testRedis(defer);
    await expect(
      evalScript(redis, "return redis.error_reply('BUDGET nope')", 1, `${prefix}:x`),
    ).rejects.toThrow('BUDGET nope');
  });
});
