/** A system call's error as one line for people: `no space left on device (ENOSPC)`. */
export function systemErrorText(error: unknown): string {
  const { code, message } = (error ?? {}) as Partial<NodeJS.ErrnoException>;
  // Node writes these as `ENOSPC: no space left on device, write '...'`.
  const description = /^[A-Z0-9_]+: ([^,]+)/.exec(message ?? '')?.[1];
  if (code && description) return `${description} (${code})`;
  return code ?? message ?? String(error);
}
