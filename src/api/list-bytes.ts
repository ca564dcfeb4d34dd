// The bytes of a list answer (GET /servers, a new watch stream's list) assembled with no JSON text
// built per answer: each record's cached UTF-8 around its uptime, and the uptime's digits written
// straight into the answer. An uptime is `(now - startMs) / 1000` printed as JSON.stringify prints
// it; with whole milliseconds on both sides (Date.now() and Date.parse always give them) that is
// the whole seconds, then, when there are any, a point and the milliseconds without their trailing
// zeros: the same bytes, without making a string and a number of it first.
//
// ListLayout keeps the unfiltered list's parts between answers: the text between two uptimes never
// changes until a record does, so it is kept as one buffer per gap, and an answer is a copy of each
// gap and the uptimes written between them.

/** True when `startMs` gives uptimes writeUptime can write (whole milliseconds, not NaN). */
export function wholeMs(startMs: number): boolean {
  return Number.isSafeInteger(startMs);
}

/** For each 0–999 milliseconds: '.' and its digits without trailing zeros (none for 0), 4 bytes a slot. */
const FRACTION = new Uint8Array(4000);
/** How many of its slot's bytes each is. */
const FRACTION_LENGTH = new Uint8Array(1000);
for (let ms = 1; ms < 1000; ms++) {
  const text = `.${String(ms).padStart(3, '0').replace(/0+$/, '')}`;
  FRACTION_LENGTH[ms] = text.length;
  for (let i = 0; i < text.length; i++) FRACTION[ms * 4 + i] = text.charCodeAt(i);
}

/** Digits of a whole number of seconds (at most 2^53 / 1000). */
function digitsOf(n: number): number {
  if (n < 10) return 1;
  if (n < 100) return 2;
  if (n < 1000) return 3;
  if (n < 10_000) return 4;
  if (n < 100_000) return 5;
  if (n < 1_000_000) return 6;
  if (n < 10_000_000) return 7;
  let length = 8;
  for (let rest = Math.floor(n / 100_000_000); rest > 0; rest = Math.floor(rest / 10)) length++;
  return length;
}

/** The length of writeUptime's output for these times (both whole milliseconds). */
export function uptimeLength(now: number, startMs: number): number {
  const ms = now - startMs;
  if (ms <= 0) return 1;
  const seconds = Math.floor(ms / 1000);
  return digitsOf(seconds) + FRACTION_LENGTH[ms - seconds * 1000];
}

/**
 * Writes the uptime at `now` of a record started at `startMs` (both whole milliseconds) as
 * String(Math.max(0, (now - startMs) / 1000)) would, at `at`; returns the bytes written.
 */
export function writeUptime(out: Uint8Array, at: number, now: number, startMs: number): number {
  const ms = now - startMs;
  if (ms <= 0) {
    out[at] = 0x30;
    return 1;
  }
  const seconds = Math.floor(ms / 1000);
  const length = digitsOf(seconds);
  // The whole seconds, last digit first.
  let rest = seconds;
  for (let i = at + length - 1; i >= at; i--) {
    const tenth = Math.floor(rest / 10);
    out[i] = 0x30 + rest - tenth * 10;
    rest = tenth;
  }
  const fraction = ms - seconds * 1000;
  const extra = FRACTION_LENGTH[fraction];
  for (let i = 0; i < extra; i++) out[at + length + i] = FRACTION[fraction * 4 + i];
  return length + extra;
}

/** One record of a layout: its cached bytes around the uptime, and when it started (undefined: no uptime spliced in). */
export interface LayoutRecord {
  readonly startMs: number | undefined;
  readonly bytes: { readonly prefix: Uint8Array; readonly suffix: Uint8Array };
}

/**
 * A list of records framed as `[a,b,…]`, with every text between two uptimes joined into one
 * buffer once. Valid for as long as the same records (the same objects, in the same order) are
 * listed: `matches` tells.
 */
export class ListLayout<R extends LayoutRecord> {
  readonly records: readonly R[];
  /** The fixed bytes: gaps[i] comes before the i-th uptime, the last after the last one. */
  readonly #gaps: Uint8Array[];
  /** When each uptime's record started. */
  readonly #starts: number[];
  readonly #fixedLength: number;

  constructor(records: readonly R[]) {
    this.records = records;
    const gaps: Uint8Array[] = [];
    const starts: number[] = [];
    let pending: Uint8Array[] = [Buffer.from('[')];
    records.forEach((record, i) => {
      if (i > 0) pending.push(Buffer.from(','));
      pending.push(record.bytes.prefix);
      if (record.startMs !== undefined) {
        gaps.push(Buffer.concat(pending));
        starts.push(record.startMs);
        pending = [];
      }
      pending.push(record.bytes.suffix);
    });
    pending.push(Buffer.from(']'));
    gaps.push(Buffer.concat(pending));
    this.#gaps = gaps;
    this.#starts = starts;
    this.#fixedLength = gaps.reduce((sum, gap) => sum + gap.length, 0);
  }

  /** Whether every start time is whole milliseconds (else the layout cannot write the uptimes). */
  static usable(records: readonly LayoutRecord[]): boolean {
    return records.every((r) => r.startMs === undefined || wholeMs(r.startMs));
  }

  /** True when `records[i]` is this layout's i-th record, for i < count, and count is all of them. */
  matchesAt(i: number, record: R): boolean {
    return this.records[i] === record;
  }

  /** The list at `now` into a buffer of exactly the length asked of `alloc`. */
  assemble(now: number, alloc: (length: number) => Buffer): Buffer {
    const starts = this.#starts;
    let length = this.#fixedLength;
    for (let i = 0; i < starts.length; i++) length += uptimeLength(now, starts[i]);
    const out = alloc(length);
    const gaps = this.#gaps;
    let at = 0;
    for (let i = 0; i < starts.length; i++) {
      out.set(gaps[i], at);
      at += gaps[i].length;
      at += writeUptime(out, at, now, starts[i]);
    }
    out.set(gaps[starts.length], at);
    return out;
  }
}
