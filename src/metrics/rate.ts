/**
 * The pool's allowed rate of API calls, read from the shared rate controller's hash in Redis
 * (`harvestKeys().rate`). Pure. Both layouts of that hash are read: the AIMD state as JSON in
 * field `state`, and the learned model (fields `regime`, `limit`, `windowMs`, `pace`).
 */

interface Paced {
  ratePerSec?: number | null;
}

function json(text: string | undefined): Paced | undefined {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as Paced;
  } catch {
    return undefined;
  }
}

/** Calls per second the pool may make now; null while no limit is known (no hash, or `open`). */
export function allowedRatePerSec(fields: Record<string, string>): number | null {
  if (fields.regime !== undefined) {
    const limit = Number(fields.limit);
    const windowMs = Number(fields.windowMs);
    switch (fields.regime) {
      case 'fixed':
      case 'rolling':
        return limit > 0 && windowMs > 0 ? (limit * 1000) / windowMs : null;
      case 'paced':
        return json(fields.pace)?.ratePerSec ?? null;
      default:
        return null;
    }
  }
  return json(fields.state)?.ratePerSec ?? null;
}
