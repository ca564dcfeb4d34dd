// Capture of one server's output files (editor.out, editor.err) for the log hub, at a cost
// bounded whatever the editor prints:
// - output that keeps coming within batchIntervalMs is read on a timer, in batches, with the
//   file watch closed meanwhile (it would wake the service for every write the editor makes);
// - a batch is split on its bytes (line-batch.ts), stamped with one time, written to server.log
//   as one buffer, and its offset saved once;
// - a token bucket (rate-limit.ts) lets at most so many lines a second become entries; the
//   others are counted and reported by a marker entry, and still written to server.log.

import fs from 'node:fs';
import path from 'node:path';
import type { LogEntry, LogLevel, LogSource } from './entry.ts';
import { RawLogFollower } from './follower.ts';
import { lineRanges, lineText, prefixedLines } from './line-batch.ts';
import type { RotatingLogFile } from './log-file.ts';
import { droppedMarker, type LineRateLimit } from './rate-limit.ts';

/** A marker reports at most this much time of dropped lines; a pause in the output reports the rest at once. */
const MARKER_INTERVAL_MS = 1000;
/** Entries handed on in one turn of the event loop, at most. */
const SLICE_LINES = 512;
/** While output is read in batches, offsets are saved at most this often. */
const COMMIT_INTERVAL_MS = 1000;

export interface OutputCaptureOptions {
  stdout: string;
  stderr: string;
  /** server.log, which receives every line. */
  file: RotatingLogFile;
  /** editor.out/err are emptied once read past this size. */
  maxFileBytes: number;
  batchIntervalMs: number;
  clock: () => number;
  /** Undefined: no limit. */
  limit: LineRateLimit | undefined;
  /** Makes an entry of the server's. */
  entry: (level: LogLevel, source: LogSource, message: string, timestamp: string) => LogEntry;
  /** Hands new entries on (memory, subscribers); `messageBytes[i]`: entry i's message in UTF-8 bytes, where known. */
  publish: (entries: LogEntry[], messageBytes: readonly number[]) => void;
  /** Lines the rate limit just dropped. */
  dropped: (count: number) => void;
  failed: (err: unknown) => void;
}

interface OutputStream {
  follower: RawLogFollower;
  level: LogLevel;
}

const WATCHED = new Set(['editor.out', 'editor.err']);

/** Follows one server's editor.out (INFO) and editor.err (WARN). */
export class OutputCapture {
  readonly #options: OutputCaptureOptions;
  readonly #dir: string;
  readonly #streams: OutputStream[];
  #watcher: fs.FSWatcher | undefined;
  /** While output comes faster than batchIntervalMs: read on this timer, not on the watch. */
  #batching = false;
  #batchTimer: NodeJS.Timeout | undefined;
  /** performance.now() of the last pass that found output. */
  #lastFoundAt = -Infinity;
  #pumping: Promise<void> | undefined;
  #dirty = false;
  #stopped = false;
  /** Lines the rate limit dropped since the capture began. */
  #dropped = 0;
  /** Of those, the ones no marker has reported yet, and the clock's time at the first of them. */
  #undeclared = 0;
  #undeclaredSince = 0;

  constructor(options: OutputCaptureOptions) {
    this.#options = options;
    this.#dir = path.dirname(options.stdout);
    this.#streams = [
      { follower: new RawLogFollower(options.stdout, `${options.stdout}.offset`), level: 'INFO' },
      { follower: new RawLogFollower(options.stderr, `${options.stderr}.offset`), level: 'WARN' },
    ];
  }

  get dropped(): number {
    return this.#dropped;
  }

  /** Starts watching and reads what is there; the error if the folder cannot be watched (the hub's poll carries on). */
  start(): Error | undefined {
    const failed = this.#watch();
    this.pump();
    return failed;
  }

  /** Stops; resolves once the pass under way has stored what it read, and its offsets are saved. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unwatch();
    clearTimeout(this.#batchTimer);
    await this.#pumping;
    for (const { follower } of this.#streams) {
      await follower.commit();
      await follower.release();
    }
  }

  /** Reads new output; wake-ups while a pass runs are folded into one more pass. */
  pump(): void {
    if (this.#stopped) return;
    if (this.#pumping) {
      this.#dirty = true;
      return;
    }
    clearTimeout(this.#batchTimer);
    this.#batchTimer = undefined;
    this.#dirty = false;
    let found = false;
    this.#pumping = this.#drain()
      .then(
        (read) => {
          found = read;
        },
        (err) => {
          this.#dirty = false; // the next watch event or poll tries again, not this turn
          this.#options.failed(err);
        },
      )
      .finally(() => {
        this.#pumping = undefined;
        this.#next(found);
      });
  }

  /** Watches the folder, not the files, so a file the runtime re-creates is still seen. */
  #watch(): Error | undefined {
    if (this.#watcher || this.#stopped) return undefined;
    try {
      const watcher = fs.watch(this.#dir, { persistent: false }, (_event, file) => {
        if (file !== null && WATCHED.has(file)) this.pump();
      });
      watcher.on('error', () => {
        watcher.close(); // e.g. the folder was removed; the poll carries on
        if (this.#watcher === watcher) this.#watcher = undefined;
      });
      this.#watcher = watcher;
      return undefined;
    } catch (err) {
      return err as Error;
    }
  }

  #unwatch(): void {
    this.#watcher?.close();
    this.#watcher = undefined;
  }

  /**
   * After a pass: output that keeps coming (another wake-up during the pass, or output found
   * again within batchIntervalMs) is read on a timer, with the watch closed and the files kept
   * open; a pass that finds nothing reports what the rate limit dropped and goes back to the
   * watch (and reads once more, for what was written before the watch began).
   */
  #next(found: boolean): void {
    if (this.#stopped) return;
    const now = performance.now();
    if (found) {
      const fast = this.#batching || this.#dirty || now - this.#lastFoundAt < this.#options.batchIntervalMs;
      this.#lastFoundAt = now;
      if (!fast) return;
      this.#batching = true;
      this.#unwatch();
      this.#batchTimer = setTimeout(() => this.pump(), this.#options.batchIntervalMs);
      this.#batchTimer.unref();
      return;
    }
    if (this.#undeclared > 0) this.#options.publish([this.#marker(new Date(this.#options.clock()).toISOString())], []);
    if (this.#batching) {
      this.#batching = false;
      for (const { follower } of this.#streams) void follower.release().catch(this.#options.failed);
      this.#watch();
      this.pump();
    } else if (this.#dirty) {
      this.pump(); // woken after the pass's last look
    }
  }

  /**
   * Reads each output file to its end; true if any output was found. Wake-ups meanwhile are
   * left to #next: looping on them here would read a flood a few lines at a time.
   */
  async #drain(): Promise<boolean> {
    let found = false;
    const hold = this.#batching;
    for (const stream of this.#streams) {
      let more = true;
      while (more && !this.#stopped) {
        const read = await stream.follower.read(hold);
        more = read.more;
        if (read.data.length > 0) found = true;
        await this.#store(stream, read.data);
      }
      if (!this.#stopped) await this.#store(stream, stream.follower.truncateIfConsumed(this.#options.maxFileBytes));
    }
    return found;
  }

  // Entries first reach server.log and only then is the offset saved: a crash in between
  // can repeat those lines after a restart but never lose them. Every line reaches server.log,
  // those the rate limit dropped included: editor.out is emptied once read, and nothing is lost.
  async #store(stream: OutputStream, data: Buffer): Promise<void> {
    const ranges = lineRanges(data);
    const count = ranges.starts.length;
    if (count > 0) {
      const { clock, limit, entry } = this.#options;
      const now = clock();
      const timestamp = new Date(now).toISOString();
      // Queued now, so that server.log keeps the batch ahead of any event recorded meanwhile.
      const written = this.#options.file.appendBytes(prefixedLines(data, ranges, Buffer.from(`${timestamp} [${stream.level}] [server] `)));
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
          entries.push(entry(stream.level, 'server', lineText(data, ranges, i), timestamp));
          sizes.push(ranges.ends[i] - ranges.starts[i]);
        }
        if (to === kept && this.#undeclared > 0 && now - this.#undeclaredSince >= MARKER_INTERVAL_MS) entries.push(this.#marker(timestamp));
        this.#options.publish(entries, sizes);
      }
      await written;
    }
    // While batching, the offset is saved about once a second (and on stop), not after every batch.
    await stream.follower.commit(this.#batching ? COMMIT_INTERVAL_MS : 0);
  }

  /** The marker entry for the dropped lines no marker has reported yet. */
  #marker(timestamp: string): LogEntry {
    const message = droppedMarker(this.#undeclared, this.#options.limit?.linesPerSec ?? 0);
    this.#undeclared = 0;
    return this.#options.entry('WARN', 'controller', message, timestamp);
  }
}
