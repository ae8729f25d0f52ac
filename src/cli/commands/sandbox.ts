/** `harvest sandbox`: runs the local API server until interrupted. */
import type { Command } from 'commander';
import { UsageError } from '../../errors.ts';
import {
  DEFAULT_CLI_PORT,
  parseCount,
  parseFaults,
  parseKeys,
  parseLatency,
  parsePositive,
  parseRateLimitMode,
  type SandboxOptions,
} from '../../sandbox/options.ts';
import { parseContentMode, parseEpochShares } from '../../sandbox/world-options.ts';
import type { CommandContext } from '../context.ts';
import { serveUntilStopped } from '../signals.ts';

interface SandboxFlags {
  port: string;
  host: string;
  keys?: string;
  threatProtectionTeams?: string;
  rateLimit?: string;
  rateLimitMode?: string;
  rateLimitWindow?: string;
  maxConcurrency?: string;
  retryAfterHeader?: boolean;
  hostedRules?: boolean;
  faults?: string;
  latency?: string;
  timeScale?: string;
  mediaPad?: string;
  seed?: string;
  epoch?: string;
  epochShares?: string;
  content?: string;
}

/** `--port`: a whole number from 0 to 65535. */
export function parsePort(text: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65_535) {
    throw new UsageError(
      `--port: a port is a whole number from 0 to 65535 (0 picks a free one), got "${text}"`,
    );
  }
  return port;
}

export function sandboxOptionsFromFlags(flags: SandboxFlags): SandboxOptions {
  const options: SandboxOptions = {
    port: parsePort(flags.port),
    host: flags.host,
    retryAfterHeader: Boolean(flags.retryAfterHeader),
    hostedRules: Boolean(flags.hostedRules),
  };
  if (flags.keys !== undefined) options.keys = parseKeys(flags.keys);
  if (flags.threatProtectionTeams !== undefined) {
    options.threatProtectionTeams = flags.threatProtectionTeams
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
  }
  if (flags.rateLimit !== undefined)
    options.rateLimitPerMinute = parsePositive('--rate-limit', flags.rateLimit);
  if (flags.rateLimitMode !== undefined)
    options.rateLimitMode = parseRateLimitMode(flags.rateLimitMode);
  if (flags.rateLimitWindow !== undefined) {
    const ms = parseCount('--rate-limit-window', flags.rateLimitWindow);
    if (ms === 0) throw new UsageError('--rate-limit-window: expected a positive number of ms');
    options.rateLimitWindowMs = ms;
  }
  if (flags.maxConcurrency !== undefined) {
    options.maxConcurrency = parsePositive('--max-concurrency', flags.maxConcurrency);
  }
  if (flags.faults !== undefined) options.faults = parseFaults(flags.faults);
  if (flags.latency !== undefined) options.latency = parseLatency(flags.latency);
  if (flags.timeScale !== undefined)
    options.timeScale = parsePositive('--time-scale', flags.timeScale);
  if (flags.mediaPad !== undefined)
    options.mediaPadBytes = parseCount('--media-pad', flags.mediaPad);
  if (flags.seed !== undefined) options.seed = parseCount('--seed', flags.seed);
  if (flags.epoch !== undefined) options.epoch = parseCount('--epoch', flags.epoch);
  if (flags.epochShares !== undefined) options.epochShares = parseEpochShares(flags.epochShares);
  if (flags.content !== undefined) options.content = parseContentMode(flags.content);
  return options;
}

export function registerSandbox(program: Command, _ctx: CommandContext): void {
  program
    .command('sandbox')
    .description(
      'Run a local server speaking the Web Data Service API (search, active crawls, params preview), ' +
        'with deterministic results, signed media that expires, injectable faults and a credit ledger ' +
        '(GET /_sandbox/ledger).',
    )
    .option('--port <port>', 'TCP port (0 picks a free one)', String(DEFAULT_CLI_PORT))
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option(
      '--keys <list>',
      'accepted keys as KEY:TEAM:CREDITS[:tp],... (a 4th field "tp" gives the team threat protection); ' +
        'default fc-sandbox:sandbox:1000000',
    )
    .option(
      '--threat-protection-teams <teams>',
      'comma-separated teams that have the threat-protection feature',
    )
    .option(
      '--rate-limit <n>',
      'requests per minute per team (per --rate-limit-window when given); default none',
    )
    .option(
      '--rate-limit-mode <mode>',
      'how requests are counted: fixed (windows aligned to the clock, as the hosted service), ' +
        'sliding (any window of that length) or token-bucket (refilled evenly); default fixed',
    )
    .option(
      '--rate-limit-window <ms>',
      'the window the rate limit counts over, in ms; the 429 text names it (req/min for 60000)',
      undefined,
    )
    .option('--max-concurrency <n>', 'requests in flight per team; one more gets 429; default none')
    .option(
      '--retry-after-header',
      'also send a Retry-After header on 429 (the hosted service does not)',
    )
    .option(
      '--hosted-rules',
      'also answer 400 to what the hosted service refuses beyond the reference ' +
        '(waitFor over half the timeout, over 60 s of waits, changeTracking in search)',
    )
    .option(
      '--faults <list>',
      'fault probabilities, e.g. 408=0.05,500=0.02,malformed=0.01,drop=0.01 ' +
        '(malformed = 200 with a truncated body, still charged; drop = connection closed, not charged)',
    )
    .option(
      '--latency <ms>',
      'simulated work per API request: MS or MIN-MAX (uniform); 408 if over the request timeout',
    )
    .option(
      '--time-scale <factor>',
      'multiply media URL lifetimes (0.001 makes 1 h last 3.6 s)',
      undefined,
    )
    .option(
      '--media-pad <bytes>',
      'make every media file about this many bytes larger (still valid); default 0 (0.1-7 kB files)',
    )
    .option('--seed <n>', 'seed of results and faults', undefined)
    .option(
      '--epoch <n>',
      'the epoch the world starts in; POST /_sandbox/epoch moves it on, changing some pages, ' +
        'ranks and results (default 0)',
    )
    .option(
      '--epoch-shares <list>',
      'what changes per epoch, e.g. content=0.1,rank=0.05,churn=0.05 (the defaults): pages whose ' +
        'content changes, results that change places, results that drop out for new ones',
    )
    .option(
      '--content <mode>',
      'scraped content: short (a few sentences, the default) or corpus (10-50 KB of Markdown and ' +
        '100-500 KB of raw HTML per page, from the docs of installed packages)',
    )
    .addHelpText(
      'after',
      '\nExamples:\n  harvest sandbox                                          # on port 3002, no limits\n  harvest sandbox --rate-limit 100                         # 100 req/min in clock minutes, like the Hobby plan\n  harvest sandbox --rate-limit 100 --rate-limit-mode sliding\n  harvest sandbox --rate-limit 10 --rate-limit-window 2000 # 10 per 2 s (the 429 says req/2s)\n  curl -X POST localhost:3002/_sandbox/rate-limit -H content-type:application/json \\\n    -d \'{"perMinute":50,"keepCounts":true}\'                 # halve it mid-run\n  harvest sandbox --epoch 3 --content corpus              # a later, real-sized world\n  curl -X POST localhost:3002/_sandbox/epoch               # one epoch on: some pages change',
    )
    .action(async (flags: SandboxFlags) => {
      // Loaded here, not at startup: see demo.ts.
      const { startSandbox } = await import('../../sandbox/index.ts');
      await serveUntilStopped(async () => {
        const sandbox = await startSandbox(sandboxOptionsFromFlags(flags));
        console.log(`sandbox listening on ${sandbox.url}`);
        for (const key of sandbox.keys) console.log(`api key: ${key.key}`);
        return () => sandbox.close();
      });
    });
}
