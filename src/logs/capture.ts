// Capture of one server's output files (editor.out, editor.err) for the log hub, at a cost
// bounded whatever the editor prints:
// - output that keeps coming within batchIntervalMs is read on a timer, in batches, with the
//   file watch closed meanwhile (it would wake the service for every write the editor makes);
// - a batch is split on its bytes (line-batch.ts), stamped with one time, written to server.log
//   as one buffer, and its offset saved once;
// - a token bucket (rate-limit.ts) lets at most so many lines a second become entries; the
//   others are counted and reported by a marker entry, and still written to server.log
//   (output-batches.ts).

import fs from 'node:fs';
import path from 'node:path';
import type { LogLevel } from './entry.ts';
import { RawLogFollower } from './follower.ts';
import { OutputBatches, type OutputBatchesOptions } from './output-batches.ts';

/** While output is read in batches, offsets are saved at most this often. */
const COMMIT_INTERVAL_MS = 1000;

export interface OutputCaptureOptions extends OutputBatchesOptions {
  stdout: string;
  stderr: string;
  /** editor.out/err are emptied once read past this size. */
  maxFileBytes: number;
  batchIntervalMs: number;
  failed: (err: unknown) => void;
  /** Told when the folder's watch begins (true) and ends (false): the hub polls an unwatched capture at every tick. */
  watching?: (watched: boolean) => void;
}

interface OutputStream {
  follower: RawLogFollower;
  level: LogLevel;
}

const WATCHED = new Set(['editor.out', 'editor.err']);

/** Follows one server's editor.out (INFO) and editor.err (WARN). */
/** A watched capture is also polled every this many hub ticks (every 6 s), as a safety net. */
export const WATCHED_POLL_EVERY = 3;

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
  /** While the editor runs (follow): watched and polled. Otherwise its files do not grow, and cost nothing. */
  #following = false;
  #drainTimer: NodeJS.Timeout | undefined;
  readonly #batches: OutputBatches;

  constructor(options: OutputCaptureOptions) {
    this.#options = options;
    this.#batches = new OutputBatches(options);
    this.#dir = path.dirname(options.stdout);
    this.#streams = [
      { follower: new RawLogFollower(options.stdout, `${options.stdout}.offset`), level: 'INFO' },
      { follower: new RawLogFollower(options.stderr, `${options.stderr}.offset`), level: 'WARN' },
    ];
  }

  get dropped(): number {
    return this.#batches.dropped;
  }

  /**
   * The hub's poll: at each of its ticks while the folder is not watched, else every
   * WATCHED_POLL_EVERY ticks in case an event was missed (the hub keeps the count, so a watched capture is not
   * touched in between: at 100 running editors that touch cost more than the look). A watched
   * capture costs one stat per file, and a read only when a file holds more than was read (a read
   * of every file cost more than everything else the service does at rest).
   */
  poll(): void {
    if (this.#watcher && !this.#batches.undeclared && this.#streams.every(({ follower }) => follower.caughtUp())) return;
    this.pump();
  }

  /** True while the editor runs, or its last lines are still being read: the hub's poll pumps it. */
  get active(): boolean {
    return this.#following;
  }

  /**
   * The editor runs: its files are watched (and polled by the hub) from now on; the error if the
   * folder cannot be watched (the hub's poll carries on). Idempotent.
   */
  follow(): Error | undefined {
    clearTimeout(this.#drainTimer);
    this.#drainTimer = undefined;
    if (this.#following || this.#stopped) return undefined;
    this.#following = true;
    const failed = this.#batching ? undefined : this.#watch();
    this.pump();
    return failed;
  }

  /** The editor no longer runs: its last lines are read for drainMs more, then the files are left alone (and `drained` is called). */
  unfollow(drainMs: number, drained?: () => void): void {
    if (!this.#following || this.#drainTimer) return;
    this.#drainTimer = setTimeout(() => {
      this.#drainTimer = undefined;
      this.#following = false;
      this.#unwatch();
      this.pump();
      drained?.();
    }, drainMs);
    this.#drainTimer.unref();
  }

  /** Stops; resolves once the pass under way has stored what it read, and its offsets are saved. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unwatch();
    clearTimeout(this.#drainTimer);
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
        if (this.#watcher !== watcher) return;
        this.#watcher = undefined;
        this.#options.watching?.(false);
      });
      this.#watcher = watcher;
      this.#options.watching?.(true);
      return undefined;
    } catch (err) {
      return err as Error;
    }
  }

  #unwatch(): void {
    if (!this.#watcher) return;
    this.#watcher.close();
    this.#watcher = undefined;
    this.#options.watching?.(false);
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
    this.#batches.quiet();
    if (this.#batching) {
      this.#batching = false;
      for (const { follower } of this.#streams) void follower.release().catch(this.#options.failed);
      if (this.#following) this.#watch();
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
  // can repeat those lines after a restart but never lose them.
  async #store(stream: OutputStream, data: Buffer): Promise<void> {
    await this.#batches.store(stream.level, data);
    // While batching, the offset is saved about once a second (and on stop), not after every batch.
    await stream.follower.commit(this.#batching ? COMMIT_INTERVAL_MS : 0);
  }
}
