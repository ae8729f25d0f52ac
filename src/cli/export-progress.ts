/** The live bar of `harvest export --out FILE` on a terminal (stderr). */
import { SingleBar } from 'cli-progress';
import type { ExportProgress } from '../report/export/run-export.ts';

export function createExportProgress(stream: NodeJS.WriteStream = process.stderr): ExportProgress {
  const bar = new SingleBar({
    stream,
    format: '{bar} {percentage}% | {value}/{total} rows | {rate} rows/s | ETA {eta}s',
    hideCursor: true,
    barsize: 24,
    etaBuffer: 50,
  });
  // From the first row on: the count of rows to export (before `start`) is not exporting.
  let startedAt = Date.now();
  let started = false;
  const rate = (rows: number) => {
    const seconds = (Date.now() - startedAt) / 1000;
    return seconds > 0 ? Math.round(rows / seconds) : '-';
  };
  return {
    start(total) {
      startedAt = Date.now();
      bar.start(total, 0, { rate: '-' });
      started = true;
    },
    update(rows) {
      if (started) bar.update(rows, { rate: rate(rows) });
    },
    stop() {
      if (started) bar.stop();
      started = false;
    },
  };
}
