// One server's output, a batch at a time, into the log: every line to server.log, the lines the
// rate limit lets through as entries (memory, subscribers, streams), and a marker entry for the
// ones it dropped. Shared by the two ways output arrives: the editor's output files
// (capture.ts) and a runtime's log stream (stream-capture.ts).

import type { LogEntry, LogLevel, LogSource } from './entry.ts';
import { lineRanges, lineText, prefixedLines } from './line-batch.ts';
import type { RotatingLogFile } from './log-file.ts';
import { droppedMarker, type LineRateLimit } from './rate-limit.ts';

/** A marker reports at most this much time of dropped lines; a pause in the output reports the rest at once. */
const MARKER_INTERVAL_MS = 1000;
/** Entries handed on in one turn of the event loop, at most. */
const SLICE_LINES = 512;

export interface OutputBatchesOptions {
  /** server.log, which receives every line. */
  file: RotatingLogFile;
  clock: () => number;
  /** Undefined: no limit. */
  limit: LineRateLimit | undefined;
  /** Makes an entry of the server's. */
  entry: (level: LogLevel, source: LogSource, message: string, timestamp: string) => LogEntry;
  /** Hands new entries on (memory, subscribers); `messageBytes[i]`: entry i's message in UTF-8 bytes, where known. */
  publish: (entries: LogEntry[], messageBytes: readonly number[]) => void;
  /** Lines the rate limit just dropped. */
  dropped: (count: number) => void;
}

export class OutputBatches {
  readonly #options: OutputBatchesOptions;
  /** Lines the rate limit dropped since the capture began. */
  #dropped = 0;
  /** Of those, the ones no marker has reported yet, and the clock's time at the first of them. */
  #undeclared = 0;
  #undeclaredSince = 0;

  constructor(options: OutputBatchesOptions) {
    this.#options = options;
  }

  get dropped(): number {
    return this.#dropped;
  }

  // Entries first reach server.log (the caller saves its read position after): a crash in
  // between can repeat those lines after a restart but never lose them. Every line reaches
  // server.log, those the rate limit dropped included, so nothing is lost.
  /** Stores the lines of `data` (a chunk of output, whole lines) at `level`, stamped with one time. */
  async store(level: LogLevel, data: Buffer): Promise<void> {
    const ranges = lineRanges(data);
    const count = ranges.starts.length;
    if (count === 0) return;
    const { clock, limit, entry } = this.#options;
    const now = clock();
    const timestamp = new Date(now).toISOString();
    // Queued now, so that server.log keeps the batch ahead of any event recorded meanwhile.
    const written = this.#options.file.appendBytes(prefixedLines(data, ranges, Buffer.from(`${timestamp} [${level}] [server] `)));
    written.catch(() => {}); // awaited below; not an unhandled rejection while the slices run
    const kept = limit ? limit.take(count) : count;
    if (kept < count) {
      if (this.#undeclared === 0) this.#undeclaredSince = now;
      this.#undeclared += count - kept;
      this.#dropped += count - kept;
      this.#options.dropped(count - kept);
    }
    // At most SLICE_LINES entries a turn of the event loop: a backlog read at once (up to a
    // read's 256 KiB) must not hold up the requests of every other editor meanwhile.
    for (let from = 0; from < kept || from === 0; from += SLICE_LINES) {
      if (from > 0) await new Promise((resolve) => setImmediate(resolve));
      const to = Math.min(kept, from + SLICE_LINES);
      const entries: LogEntry[] = [];
      const sizes: number[] = [];
      for (let i = from; i < to; i++) {
        entries.push(entry(level, 'server', lineText(data, ranges, i), timestamp));
        sizes.push(ranges.ends[i] - ranges.starts[i]);
      }
      if (to === kept && this.#undeclared > 0 && now - this.#undeclaredSince >= MARKER_INTERVAL_MS) entries.push(this.#marker(timestamp));
      this.#options.publish(entries, sizes);
    }
    await written;
  }

  /** Whether dropped lines wait for their marker (quiet() would publish one). */
  get undeclared(): boolean {
    return this.#undeclared > 0;
  }

  /** The output paused: the lines dropped that no marker has reported yet are reported now. */
  quiet(): void {
    if (this.#undeclared > 0) this.#options.publish([this.#marker(new Date(this.#options.clock()).toISOString())], []);
  }

  /** The marker entry for the dropped lines no marker has reported yet. */
  #marker(timestamp: string): LogEntry {
    const message = droppedMarker(this.#undeclared, this.#options.limit?.linesPerSec ?? 0);
    this.#undeclared = 0;
    return this.#options.entry('WARN', 'controller', message, timestamp);
  }
}
