/**
 * Lets searches in this process wait: while media is urgent, and while the API key's rate limit
 * holds its calls.
 *
 * A pool that runs the search and media roles in one process (`harvest run --local`, the
 * default `harvest worker`) shares one event loop between them: a saturated search queue can
 * take the CPU the downloads need to meet their deadlines, though the media queue is its own.
 * The media role holds the gate (`set`) while media due soon waits in its queue.
 *
 * The rate controller holds it (`holdFor`) while the key's calls must wait (a 429, a spent
 * window): calls with another key, in other processes, go on taking the jobs this one leaves.
 *
 * While the gate is held the search role's workers stop taking jobs (calls in flight finish),
 * and take them again once it is released. Pools in other processes are not affected.
 */
export class SearchGate {
  #urgent = false;
  #heldUntil = 0;
  #timer: NodeJS.Timeout | undefined;
  #held = false;
  readonly #listeners = new Set<(held: boolean) => void>();

  get held(): boolean {
    return this.#held;
  }

  /** What searches wait for while the gate is held. */
  get reason(): string | undefined {
    if (this.#urgent) return 'urgent media';
    return this.#heldUntil > Date.now() ? 'the API key’s rate limit' : undefined;
  }

  /** Calls `listener` on every change; returns the function that stops it. */
  onChange(listener: (held: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Urgent media waits (true) or no longer (false). */
  set(held: boolean): void {
    this.#urgent = held;
    this.#update();
  }

  /** Holds searches for `ms` more (a longer hold already in force stays). */
  holdFor(ms: number, nowMs = Date.now()): void {
    const until = nowMs + Math.max(0, ms);
    if (until <= this.#heldUntil) return;
    this.#heldUntil = until;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#update(), until - nowMs + 1);
    this.#timer.unref();
    this.#update();
  }

  /** Forgets a rate hold (the pool closes). */
  clear(): void {
    clearTimeout(this.#timer);
    this.#heldUntil = 0;
    this.#update();
  }

  #update(): void {
    const held = this.#urgent || this.#heldUntil > Date.now();
    if (held === this.#held) return;
    this.#held = held;
    for (const listener of this.#listeners) listener(held);
  }
}
