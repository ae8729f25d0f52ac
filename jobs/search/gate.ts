/**
 * Lets searches in this process wait while media is urgent. A pool that runs the search and
 * media roles in one process (`harvest run --local`, the default `harvest worker`) shares one
 * event loop between them: a saturated search queue can take the CPU the downloads need to
 * meet their deadlines, though the media queue is its own. The media role holds the gate while
 * media due soon waits in its queue; the search role's workers stop taking jobs meanwhile (calls
 * in flight finish), and take them again once it is released. Pools in other processes are not
 * affected: they do not share this event loop.
 */
export class SearchGate {
  #held = false;
  readonly #listeners = new Set<(held: boolean) => void>();

  get held(): boolean {
    return this.#held;
  }

  /** Calls `listener` on every change; returns the function that stops it. */
  onChange(listener: (held: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  set(held: boolean): void {
    if (held === this.#held) return;
    this.#held = held;
    for (const listener of this.#listeners) listener(held);
  }
}
