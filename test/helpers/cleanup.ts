/** Undoing what a test started, last first, after each test of the file. */
import { afterEach } from 'vitest';

/** Registers the file's cleanup; the returned function adds one undo step. */
export function useCleanup(): (undo: () => unknown) => void {
  const steps: (() => unknown)[] = [];
  afterEach(async () => {
    while (steps.length > 0) await steps.pop()?.();
  });
  return (undo) => {
    steps.push(undo);
  };
}
