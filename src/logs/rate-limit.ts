// What one editor's output may cost: a token bucket of lines per server, and the marker that
// says how many lines it dropped.

export interface LineRateLimitOptions {
  /** Lines a second kept on average; 0 or less: no limit. */
  linesPerSec: number;
  /** Lines kept at once after a quiet spell (the bucket's size). */
  burst: number;
  /** Milliseconds, for refilling the bucket (Date.now, or a test's clock). */
  now: () => number;
}

/**
 * A token bucket: `take(n)` answers how many of n lines may pass now, the first ones of the
 * batch (the caller keeps those and drops the rest). Refills at linesPerSec up to burst.
 */
export class LineRateLimit {
  readonly linesPerSec: number;
  readonly burst: number;
  readonly #now: () => number;
  #tokens: number;
  #at: number;

  constructor(options: LineRateLimitOptions) {
    this.linesPerSec = options.linesPerSec;
    this.burst = Math.max(1, options.burst);
    this.#now = options.now;
    this.#tokens = this.burst;
    this.#at = options.now();
  }

  get limited(): boolean {
    return this.linesPerSec > 0;
  }

  take(lines: number): number {
    if (!this.limited || lines <= 0) return Math.max(0, lines);
    const now = this.#now();
    // A clock that goes back (a test's, or a stepped wall clock) refills nothing.
    if (now > this.#at) this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#at) * this.linesPerSec) / 1000);
    this.#at = now;
    const kept = Math.min(lines, Math.floor(this.#tokens));
    this.#tokens -= kept;
    return kept;
  }
}

/** 12345 → "12,345" (no Intl: it would touch ICU's data, memory the service does not otherwise use). */
export function groupDigits(count: number): string {
  return String(count).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** The entry's text where lines went missing: `… 12,345 lines dropped (rate limit 5,000 lines/s)`. */
export function droppedMarker(count: number, linesPerSec: number): string {
  return `… ${groupDigits(count)} ${count === 1 ? 'line' : 'lines'} dropped (rate limit ${groupDigits(linesPerSec)} lines/s)`;
}
