/** Human output of run progress: a live bar on a TTY, a line every few seconds elsewhere. */
import { SingleBar } from 'cli-progress';
import { describeOutage } from '../api/outage.ts';
import type { Progress } from '../run/wait.ts';
import { formatMediaSummary } from './media-format.ts';
import { terminalText } from './terminal-text.ts';

export interface ProgressView {
  update(p: Progress): void;
  stop(): void;
}

export function createProgressView(stream: NodeJS.WriteStream = process.stderr): ProgressView {
  if (stream.isTTY) {
    const bar = new SingleBar({
      stream,
      format:
        '{bar} {percentage}% | {value}/{total} done | failed {failed} | retrying {retrying} | credits {credits} | {rate} | ETA {eta}{outage}',
      hideCursor: true,
      barsize: 24,
    });
    let started = false;
    return {
      update(p) {
        const payload = {
          failed: p.failed,
          retrying: p.retrying,
          credits: p.creditsUsed,
          rate: formatRate(p.ratePerSec),
          eta: p.etaSec === null ? '-' : `${p.etaSec}s`,
          outage: p.apiOutage ? ` | ${terminalText(describeOutage(p.apiOutage, Date.now()))}` : '',
        };
        if (!started) {
          bar.start(p.total, p.done + p.failed, payload);
          started = true;
        }
        bar.update(p.done + p.failed, payload);
      },
      stop() {
        if (started) bar.stop();
      },
    };
  }
  let last = 0;
  return {
    update(p) {
      const now = Date.now();
      if (now - last < 5000) return;
      last = now;
      stream.write(`${formatProgressLine(p)}\n`);
    },
    stop() {},
  };
}

export function formatProgressLine(p: Progress): string {
  const media = p.media ? `, media saved ${p.media.saved}/${p.media.requested}` : '';
  // The last error quotes the API or the network: escaped, so it cannot drive the terminal.
  const outage = p.apiOutage ? `; ${terminalText(describeOutage(p.apiOutage, Date.now()))}` : '';
  return `${p.runId}: ${p.done + p.failed}/${p.total} ended (done ${p.done}, failed ${p.failed}, retrying ${p.retrying}), credits ${p.creditsUsed}${media}, ${formatRate(p.ratePerSec)}${outage}`;
}

/** Tasks ended per second, or `-/s` while the rate is not known yet. */
function formatRate(perSec: number | null): string {
  return perSec === null ? '-/s' : `${perSec.toFixed(1)}/s`;
}

export function formatSummary(p: Progress, dbPath: string, nowMs = Date.now()): string {
  const lines = [
    `run ${p.runId}: ${p.status}`,
    `  tasks   ${p.total} (done ${p.done}, failed ${p.failed}, unfinished ${p.total - p.done - p.failed})`,
    `  calls   ${p.calls}, credits used ${p.creditsUsed}${p.unknownCostCalls ? ` (+${p.unknownCostCalls} calls of unknown cost)` : ''}`,
    ...(p.newUrls === undefined ? [] : [`  new     ${p.newUrls} results new to the pipeline`]),
    ...(p.media ? [`  media   ${formatMediaSummary(p.media, nowMs)}`] : []),
    `  time    ${(p.elapsedMs / 1000).toFixed(1)}s`,
    `  stored  ${dbPath}`,
  ];
  if (p.paused) {
    // The reason quotes the API's answer: escaped, so it cannot drive the terminal.
    lines.push(terminalText(`  PAUSED  ${p.paused.code}: ${p.paused.reason}`));
  }
  if (p.mediaPaused) {
    lines.push(
      terminalText(
        `  PAUSED  media queue, ${p.mediaPaused.code}: ${p.mediaPaused.reason}; free space, then \`harvest media retry\``,
      ),
    );
  }
  return lines.join('\n');
}
