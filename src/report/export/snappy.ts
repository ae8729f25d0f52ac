/**
 * Snappy for Parquet pages: the `snappy` package's compressor (native, prebuilt for each
 * platform, through Node-API, so one build serves every Node), about 5 × the speed of
 * hyparquet-writer's JavaScript one, which was most of the CPU of a Parquet export of scraped
 * pages. Where the package's binary is not installed (a platform it has no build for), the
 * writer keeps its own.
 */
import { createRequire } from 'node:module';

export type Compress = (input: Uint8Array) => Uint8Array;

function nativeSnappy(): Compress | undefined {
  try {
    const { compressSync } = createRequire(import.meta.url)('snappy') as typeof import('snappy');
    // Output in a buffer V8 allocates and counts: an external buffer (the default) is memory the
    // collector does not see, and an export's peak RSS grew by up to 0.9 GB with it.
    return (input) => compressSync(input, { copyOutputData: true });
  } catch {
    return undefined;
  }
}

/** The native compressor; undefined where it cannot load. */
export const nativeSnappyCompress: Compress | undefined = nativeSnappy();
