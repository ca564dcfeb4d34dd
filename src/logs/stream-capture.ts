// Capture of one server's output from a runtime's log stream, for a runtime that writes no output
// files here (the editor runs in a Pod): the same log as from files (output-batches.ts: every line
// in server.log, the rate limit, its marker), fed from `runtime.logs()` while the editor runs.
// Lines that arrive together are stored as one batch; a flood is stored every batchIntervalMs,
// and reading pauses while too many lines wait, so the stream is held back rather than memory.
// A stream that ends (the container ended) or fails is opened again for the output from then on,
// after a pause that grows while streams give nothing.

import { pause } from '../core/pause.ts';
import { backoffMs } from '../core/backoff.ts';
import type { LogLevel } from './entry.ts';
import { OutputBatches, type OutputBatchesOptions } from './output-batches.ts';

/** One line of an editor's output, as a runtime's log stream gives it. */
export interface OutputLine {
  stream: 'stdout' | 'stderr';
  line: string;
}

/**
 * Where the output of editors that write no files here comes from: the runtime's logs(). `since`
 * 'start': the current editor's output from its start (one launched in this run of the service);
 * 'now': from now on. The stream may end when the editor does.
 */
export type EditorOutputSource = (name: string, options: { signal: AbortSignal; since: 'now' | 'start' }) => AsyncIterable<OutputLine>;

/** Lines waiting to be stored past which the stream is not read until they are. */
const MAX_PENDING_LINES = 8192;
/** The pause before a stream that ended with nothing, or failed, is opened again: 1 s, 2 s … up to this. */
const MAX_REOPEN_MS = 30_000;

export interface StreamCaptureOptions extends OutputBatchesOptions {
  name: string;
  source: EditorOutputSource;
  batchIntervalMs: number;
  /** A stream failed (said once for a run of failures). */
  failed: (err: unknown) => void;
}

/** Follows one server's output from a log stream while it is told to (follow), into the log. */
export class StreamCapture {
  readonly #options: StreamCaptureOptions;
  readonly #batches: OutputBatches;
  #session: { stop: AbortController; done: Promise<void> } | undefined;
  #drainTimer: NodeJS.Timeout | undefined;
  /** Lines read and not stored yet: one level's run, in order. */
  #pending: { level: LogLevel; lines: string[] } | undefined;
  #flushTimer: NodeJS.Timeout | undefined;
  #quietTimer: NodeJS.Timeout | undefined;
  #lastFlushAt = -Infinity;
  /** Stores in order, one batch at a time. */
  #storing: Promise<void> = Promise.resolve();

  constructor(options: StreamCaptureOptions) {
    this.#options = options;
    this.#batches = new OutputBatches(options);
  }

  get dropped(): number {
    return this.#batches.dropped;
  }

  /** Nothing to start until the editor runs (follow). */
  start(): undefined {
    return undefined;
  }

  /** Nothing to poll: the stream brings its lines. */
  pump(): void {}

  poll(): void {}

  /** The editor runs: follows its output (from `since` when a stream is opened now); a stream already open carries on. */
  follow(since: 'now' | 'start'): void {
    clearTimeout(this.#drainTimer);
    this.#drainTimer = undefined;
    if (this.#session) return;
    const stop = new AbortController();
    this.#session = { stop, done: this.#run(stop.signal, since) };
  }

  /** The editor no longer runs: its last lines are read for drainMs more, then the stream is closed. */
  unfollow(drainMs: number): void {
    if (!this.#session || this.#drainTimer) return;
    this.#drainTimer = setTimeout(() => {
      this.#drainTimer = undefined;
      void this.#end();
    }, drainMs);
    this.#drainTimer.unref();
  }

  /** Closes the stream; resolves once what was read is stored. */
  async stop(): Promise<void> {
    clearTimeout(this.#drainTimer);
    this.#drainTimer = undefined;
    await this.#end();
    clearTimeout(this.#quietTimer);
  }

  async #end(): Promise<void> {
    const session = this.#session;
    if (!session) return;
    session.stop.abort();
    await session.done;
    if (this.#session === session) this.#session = undefined;
  }

  async #run(signal: AbortSignal, since: 'now' | 'start'): Promise<void> {
    let empty = 0;
    let failing = false;
    while (!signal.aborted) {
      const read = { lines: false };
      let ended = false;
      try {
        await this.#read(signal, since, read);
        ended = true;
        failing = false;
      } catch (err) {
        if (!signal.aborted && !failing) this.#options.failed(err);
        failing = !signal.aborted;
      }
      if (signal.aborted) break;
      // After a stream that gave lines or ended, only what comes next: what it gave is stored, or
      // on its way. One that failed before giving anything is asked for the same again.
      if (read.lines || ended) since = 'now';
      empty = read.lines ? 0 : empty + 1;
      if (empty > 0) await pause(backoffMs(empty, { initialMs: 1000, maxMs: MAX_REOPEN_MS }), signal);
    }
    await this.#flush();
  }

  /** Reads one stream until it ends or the signal aborts (even if the source does not heed it); `read.lines` once it gave a line. */
  async #read(signal: AbortSignal, since: 'now' | 'start', read: { lines: boolean }): Promise<void> {
    const lines = this.#options.source(this.#options.name, { signal, since })[Symbol.asyncIterator]();
    const aborted = new Promise<IteratorResult<OutputLine>>((resolve) => {
      if (signal.aborted) resolve({ done: true, value: undefined });
      signal.addEventListener('abort', () => resolve({ done: true, value: undefined }), { once: true });
    });
    try {
      for (;;) {
        const next = lines.next();
        next.catch(() => {}); // left behind when the signal wins the race
        const result = await Promise.race([next, aborted]);
        if (result.done) return;
        read.lines = true;
        if (this.#add(result.value.stream === 'stderr' ? 'WARN' : 'INFO', result.value.line) >= MAX_PENDING_LINES) await this.#flush();
      }
    } finally {
      if (signal.aborted) lines.return?.()?.catch(() => {});
    }
  }

  /** Adds a line to the pending run (storing the run before it when the level changes); the lines now pending. */
  #add(level: LogLevel, line: string): number {
    if (this.#pending && this.#pending.level !== level) void this.#flush();
    this.#pending ??= { level, lines: [] };
    this.#pending.lines.push(line);
    if (!this.#flushTimer) {
      // Alone, a line is stored at once; in a flood, every batchIntervalMs.
      const wait = Math.max(0, this.#lastFlushAt + this.#options.batchIntervalMs - performance.now());
      this.#flushTimer = setTimeout(() => void this.#flush(), wait);
      this.#flushTimer.unref();
    }
    return this.#pending.lines.length;
  }

  /** Stores the pending lines as one batch; resolves once every batch so far is stored. */
  #flush(): Promise<void> {
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    const batch = this.#pending;
    this.#pending = undefined;
    if (batch) {
      this.#lastFlushAt = performance.now();
      const data = Buffer.from(`${batch.lines.join('\n')}\n`, 'utf8');
      this.#storing = this.#storing.then(() => this.#batches.store(batch.level, data)).catch((err) => this.#options.failed(err));
      // The output pausing reports the lines the rate limit dropped meanwhile.
      clearTimeout(this.#quietTimer);
      this.#quietTimer = setTimeout(() => {
        if (!this.#pending) void this.#storing.then(() => this.#batches.quiet());
      }, this.#options.batchIntervalMs * 2);
      this.#quietTimer.unref();
    }
    return this.#storing;
  }
}
