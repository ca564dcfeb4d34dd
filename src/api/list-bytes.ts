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

import type { FeedEntry } from './server-feed.ts';

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

const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');
/** How a piece begins: with the list's '[', a ',' before a record, or a record's text after its uptime. */
type Begin = 'open' | 'comma' | 'suffix';

/** One record of a layout: its cached bytes around the uptime, and when it started (undefined: no uptime spliced in). */
export interface LayoutRecord {
  readonly startMs: number | undefined;
  readonly bytes: { readonly prefix: Uint8Array; readonly suffix: Uint8Array };
}

/** Records joined into one piece of the fixed text at most: a change rebuilds only its pieces. */
const RECORDS_PER_PIECE = 64;

/**
 * A list of records framed as `[a,b,…]`, its fixed text (everything but the uptimes) kept in
 * pieces: a piece ends where an uptime is written, and after every RECORDS_PER_PIECE records.
 * Valid for as long as the same records (the same objects, in the same order) are listed:
 * `matchesAt` tells. Made from the layout before it, a piece built from the very same records at
 * the same place is taken over as it is, so a stats sample that changed a hundred running
 * editors' records rebuilds their pieces, not the ten thousand stopped ones' (7 MB).
 */
export class ListLayout<R extends LayoutRecord> {
  readonly records: readonly R[];
  /** The fixed bytes, in order; an uptime is written after piece i when #uptimeAfter[i] is a start time. */
  readonly #pieces: Uint8Array[];
  readonly #uptimeAfter: Array<number | undefined>;
  /** The records each piece was made from (a record split by its uptime is in both pieces), and how it begins. */
  readonly #madeFrom: R[][];
  readonly #begins: Begin[];
  /** The pieces by their first record: where a piece made of the same records may be found. */
  readonly #byFirst = new Map<R, number[]>();

  constructor(records: readonly R[], previous?: ListLayout<R>) {
    this.records = records;
    const pieces: Uint8Array[] = [];
    const uptimeAfter: Array<number | undefined> = [];
    const madeFrom: R[][] = [];
    const begins: Begin[] = [];
    let parts: Uint8Array[] = [OPEN];
    let from: R[] = [];
    let begin: Begin = 'open';
    const close = (uptime: number | undefined, next: Begin, last = false) => {
      const at = pieces.length;
      const kept = previous?.find(from, begin, uptime, last);
      pieces.push(kept ?? Buffer.concat(parts));
      uptimeAfter.push(uptime);
      madeFrom.push(from);
      begins.push(begin);
      if (from.length > 0) this.#byFirst.set(from[0], [...(this.#byFirst.get(from[0]) ?? []), at]);
      parts = [];
      from = [];
      begin = next;
    };
    records.forEach((record, i) => {
      if (i > 0) parts.push(COMMA);
      parts.push(record.bytes.prefix);
      from.push(record);
      if (record.startMs !== undefined) {
        close(record.startMs, 'suffix');
        from.push(record);
      }
      parts.push(record.bytes.suffix);
      if ((i + 1) % RECORDS_PER_PIECE === 0) close(undefined, 'comma');
    });
    parts.push(CLOSE);
    close(undefined, 'comma', true);
    this.#pieces = pieces;
    this.#uptimeAfter = uptimeAfter;
    this.#madeFrom = madeFrom;
    this.#begins = begins;
  }

  /** The bytes of a piece of this layout made from exactly these records, begun and ended the same way; else undefined. */
  find(from: readonly R[], begin: Begin, uptime: number | undefined, last: boolean): Uint8Array | undefined {
    if (from.length === 0) return undefined;
    for (const at of this.#byFirst.get(from[0]) ?? []) {
      const made = this.#madeFrom[at];
      if (this.#begins[at] === begin && this.#uptimeAfter[at] === uptime && made.length === from.length && made.every((r, i) => r === from[i])) {
        // The last piece holds the closing bracket: taken over only as the last.
        if ((at === this.#pieces.length - 1) === last) return this.#pieces[at];
      }
    }
    return undefined;
  }

  /** Whether every start time is whole milliseconds (else the layout cannot write the uptimes). */
  static usable(records: readonly LayoutRecord[]): boolean {
    return records.every((r) => r.startMs === undefined || wholeMs(r.startMs));
  }

  /** True when `records[i]` is this layout's i-th record, for i < count, and count is all of them. */
  matchesAt(i: number, record: R): boolean {
    return this.records[i] === record;
  }

  /**
   * The list at `now` as its fixed pieces with the uptimes between them, in order, and their total
   * length: written to a socket together (one writev), with nothing copied into one buffer first.
   */
  chunks(now: number): { chunks: Uint8Array[]; length: number } {
    const chunks: Uint8Array[] = [];
    let length = 0;
    for (let i = 0; i < this.#pieces.length; i++) {
      const piece = this.#pieces[i];
      if (piece.length > 0) chunks.push(piece);
      length += piece.length;
      const start = this.#uptimeAfter[i];
      if (start === undefined) continue;
      const uptime = Buffer.allocUnsafe(uptimeLength(now, start));
      writeUptime(uptime, 0, now, start);
      chunks.push(uptime);
      length += uptime.length;
    }
    return { chunks, length };
  }

  /** The list at `now` into a buffer of exactly the length asked of `alloc`: its chunks, copied. */
  assemble(now: number, alloc: (length: number) => Buffer): Buffer {
    const { chunks, length } = this.chunks(now);
    const out = alloc(length);
    let at = 0;
    for (const chunk of chunks) {
      out.set(chunk, at);
      at += chunk.length;
    }
    return out;
  }
}

export function numberJson(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}

/** A record's uptime at `now` as JSON, as uptimeOf computes it (start_time parsed once into startMs). */
export function uptimeJson(now: number, startMs: number): string {
  return numberJson(Math.max(0, (now - startMs) / 1000));
}

/** What surrounds the records in an answer assembled by recordsAsBytes: ASCII text only. */
export interface RecordsFrame {
  open: string;
  /** Before the i-th record. */
  before: (i: number) => string;
  /** After each record. */
  after: string;
  close: string;
}

/**
 * The entries' records as UTF-8 with their uptimes at this moment, framed by `frame`, written
 * into a buffer of exactly the length from `alloc`.
 */
export function recordsAsBytes(entries: readonly Pick<FeedEntry, 'startMs' | 'bytes'>[], frame: RecordsFrame, alloc: (length: number) => Buffer): Buffer {
  const now = Date.now();
  // Digits, a point, e, + or -: one byte each, like all the frame's text. Whole-millisecond start
  // times (all of them, but for a start_time Date.parse cannot read) are written as digits straight
  // into the answer (list-bytes.ts); any other goes through its JSON text.
  const texts = entries.map((e) => (e.startMs === undefined || wholeMs(e.startMs) ? undefined : uptimeJson(now, e.startMs)));
  let length = frame.open.length + frame.close.length + entries.length * frame.after.length;
  entries.forEach((e, i) => {
    const uptime = e.startMs === undefined ? 0 : texts[i]?.length ?? uptimeLength(now, e.startMs);
    length += frame.before(i).length + e.bytes.prefix.length + uptime + e.bytes.suffix.length;
  });
  const out = alloc(length);
  let at = out.write(frame.open, 0, 'latin1');
  entries.forEach((e, i) => {
    at += out.write(frame.before(i), at, 'latin1');
    out.set(e.bytes.prefix, at);
    at += e.bytes.prefix.length;
    if (e.startMs !== undefined) at += texts[i] === undefined ? writeUptime(out, at, now, e.startMs) : out.write(texts[i]!, at, 'latin1');
    out.set(e.bytes.suffix, at);
    at += e.bytes.suffix.length;
    at += out.write(frame.after, at, 'latin1');
  });
  out.write(frame.close, at, 'latin1');
  return out;
}
