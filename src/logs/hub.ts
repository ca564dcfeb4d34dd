// The log hub: follows each editor's output files (capture.ts, at a bounded cost per editor),
// or, for a runtime that writes none here, its log stream while the editor runs
// (stream-capture.ts); records controller events, keeps a bounded history per server in memory
// and on disk, and tells subscribers about every new entry.

import fs from 'node:fs';
import path from 'node:path';
import { formatLogLine, parseLogLine, type LogEntry, type LogLevel, type LogSource, type TrackedServer } from './entry.ts';
import { BACKGROUND_MS, every, type Periodic } from '../core/ticks.ts';
import { OutputCapture, WATCHED_POLL_EVERY } from './capture.ts';
import { EntryRing, entryBytes } from './entry-ring.ts';
import { RotatingLogFile, readTailLines } from './log-file.ts';
import { LineRateLimit } from './rate-limit.ts';
import { StreamCapture, type EditorOutputSource } from './stream-capture.ts';

export interface LogHubOptions {
  logsDir: string;
  /** In-memory history per server, bounded in bytes. Default 1 MiB. */
  maxBufferBytes?: number;
  /** Size at which server.log rotates and editor.out/err are emptied. Default 5 MiB. */
  maxFileBytes?: number;
  /** Rotated server.log files kept (server.log.1 … .N). Default 3. */
  maxFiles?: number;
  /** Fallback poll of the output files, for changes fs.watch misses. Default BACKGROUND_MS (2 s). */
  pollIntervalMs?: number;
  /**
   * Lines a second of one server's output (editor.out and editor.err together) that become
   * entries: kept in memory, sent to subscribers and streams. A token bucket: `burst` lines at
   * once after a quiet spell, then `linesPerSec`. Lines beyond it are counted (state), reported
   * by a marker entry ("… 12,345 lines dropped (rate limit 5,000 lines/s)") and still written
   * to server.log. linesPerSec 0: no limit. Default 5,000 lines/s, burst twice that.
   */
  rateLimit?: { linesPerSec?: number; burst?: number };
  /** Output arriving faster than this is read every this many ms, in batches. Default 50 ms. */
  batchIntervalMs?: number;
  /** Milliseconds since the epoch, for entry times and the rate limit. Default Date.now (tests inject one). */
  clock?: () => number;
  /** Where failures to read or write log files are reported. Default console.error. */
  log?: (message: string) => void;
  /**
   * For a runtime that writes no output files here: its log stream, read for each server while
   * follow() says its editor runs. Unset: each server's editor.out and editor.err are followed.
   */
  output?: EditorOutputSource;
}

// Defined in entry.ts; re-exported for the modules that import it from here.
export type { TrackedServer };

type Listener = (entry: LogEntry) => void;
/** Entries of one server, in order: one batch read from its output, or one event. */
type BatchListener = (entries: readonly LogEntry[]) => void;

const DEFAULT_LINES_PER_SEC = 5000;
/** How long a stream is still read after its editor stopped, for its last lines. */
const DRAIN_MS = 5000;

interface Tracked {
  server: TrackedServer;
  file: RotatingLogFile;
  /**
   * With an output source, its stream (read only while followed). With output files, made when the
   * editor is first followed and dropped once its last lines are read: a stopped server holds no
   * reader, buffer or watch, however many are declared.
   */
  capture: OutputCapture | StreamCapture | undefined;
  /** The server's rate limit, made with its first capture (its token bucket outlives each capture). */
  limit?: LineRateLimit;
  /** Lines the rate limit dropped in captures this server had before. */
  droppedBefore: number;
  ring: EntryRing;
  stopped: boolean;
}

/**
 * Copies of the server's strings that stand alone. An id or name parsed from a manifest is a
 * slice of the whole file's text, and V8 keeps that text alive for as long as the slice lives:
 * thousands of log entries would otherwise pin one old manifest text each few lines.
 */
function ownStrings(server: TrackedServer): TrackedServer {
  const own = (text: string) => Buffer.from(text, 'utf8').toString('utf8');
  return { name: own(server.name), id: own(server.id), displayName: own(server.displayName) };
}

/** The entries of a folder; none when it is missing or cannot be read. */
function listFolder(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

const STDOUT = 'editor.out';
const STDERR = 'editor.err';

/** Log capture for every tracked server: one instance per service. */
export class LogHub {
  readonly #logsDir: string;
  readonly #maxBufferBytes: number;
  readonly #maxFileBytes: number;
  readonly #maxFiles: number;
  readonly #linesPerSec: number;
  readonly #burst: number;
  readonly #batchIntervalMs: number;
  readonly #clock: () => number;
  readonly #log: (message: string) => void;
  readonly #output: EditorOutputSource | undefined;
  readonly #servers = new Map<string, Tracked>();
  /**
   * The names whose log folder was there when the hub started, and those tracked since: a name
   * that is neither is new to the logs folder, with no history to read back and no file to look for.
   */
  readonly #folders: Set<string>;
  readonly #listeners = new Map<string | null, Set<Listener>>();
  readonly #batchListeners = new Map<string | null, Set<BatchListener>>();
  readonly #poll: Periodic;
  /** The captures of editor output files followed (their editor runs, or just stopped), by server name. */
  readonly #following = new Map<string, OutputCapture>();
  /** Those whose folder is not watched now: polled at every tick, the others every WATCHED_POLL_EVERY. */
  readonly #unwatched = new Set<OutputCapture>();
  #ticks = 0;
  /** Lines the rate limit dropped since the start, servers no longer tracked included. */
  #dropped = 0;

  constructor(options: LogHubOptions) {
    this.#logsDir = options.logsDir;
    this.#maxBufferBytes = options.maxBufferBytes ?? 1024 * 1024;
    this.#maxFileBytes = options.maxFileBytes ?? 5 * 1024 * 1024;
    this.#maxFiles = options.maxFiles ?? 3;
    this.#linesPerSec = Math.max(0, options.rateLimit?.linesPerSec ?? DEFAULT_LINES_PER_SEC);
    this.#burst = Math.max(1, options.rateLimit?.burst ?? 2 * this.#linesPerSec);
    this.#batchIntervalMs = options.batchIntervalMs ?? 50;
    this.#clock = options.clock ?? (() => Date.now());
    this.#log = options.log ?? ((message) => console.error(message));
    this.#output = options.output;
    this.#folders = new Set(listFolder(this.#logsDir));
    // Only the output of editors that run is polled: thousands of stopped servers cost nothing here.
    // On the service's shared tick (src/core/ticks.ts), which never keeps the process alive.
    this.#poll = every(options.pollIntervalMs ?? BACKGROUND_MS, () => {
      const polled = ++this.#ticks % WATCHED_POLL_EVERY === 0 ? this.#following.values() : this.#unwatched;
      for (const capture of polled) capture.poll();
    });
  }

  /** The folder of a server's logs and the files the runtime opens (O_APPEND) for the editor; the runtime makes the folder if it is missing. */
  rawPaths(name: string): { dir: string; stdout: string; stderr: string } {
    return editorOutputFiles(this.#logsDir, name);
  }

  /**
   * Starts following a server's editor.out (INFO) and editor.err (WARN), or with an output
   * source, makes ready to follow its stream (follow()). Idempotent; a second call only updates
   * the id and display name. Reloads history from server.log, so after a service restart tail()
   * answers as before and reading resumes at the saved offsets.
   */
  track(server: TrackedServer): void {
    const existing = this.#servers.get(server.name);
    if (existing) {
      // Every entry holds these strings: swap them only when they really change.
      if (existing.server.id !== server.id || existing.server.displayName !== server.displayName) {
        existing.server = ownStrings(server);
      }
      return;
    }
    // The folder is made by the first write into it (server.log's, or the runtime's when it
    // launches the editor), not here: tracking thousands of servers at once costs no syscall each.
    const known = this.#folders.has(server.name);
    this.#folders.add(server.name);
    const file = new RotatingLogFile(path.join(this.rawPaths(server.name).dir, 'server.log'), this.#maxFileBytes, this.#maxFiles, !known);
    const tracked: Tracked = { server: ownStrings(server), file, capture: undefined, droppedBefore: 0, ring: new EntryRing(this.#maxBufferBytes), stopped: false };
    if (this.#output) tracked.capture = new StreamCapture({ ...this.#batches(tracked), name: server.name, source: this.#output });
    for (const line of known ? readTailLines(tracked.file.path, this.#maxFiles, this.#maxBufferBytes) : []) {
      const entry = parseLogLine(line, tracked.server);
      if (entry) tracked.ring.push(entry);
    }
    this.#servers.set(server.name, tracked);
  }

  /**
   * The server's editor runs, so its output is read: with an output source its stream (a stream
   * already read carries on; `since` 'start' for an editor launched in this run of the service,
   * whose whole output is new, 'now' for one adopted); otherwise its output files are watched and
   * polled from their saved offsets. Idempotent.
   */
  follow(name: string, since: 'now' | 'start'): void {
    const tracked = this.#servers.get(name);
    if (!tracked || tracked.stopped) return;
    // Its editor runs: the lines held until its folder is made are written now.
    tracked.file.write().catch((err) => this.#reportFailure(tracked, err));
    if (tracked.capture instanceof StreamCapture) return tracked.capture.follow(since);
    const { stdout, stderr } = this.rawPaths(name);
    const capture = tracked.capture ?? (tracked.capture = this.#capture(tracked, stdout, stderr));
    if (capture.active) return;
    // The folder is watched: made here when no write has made it yet (one call per editor started).
    fs.mkdirSync(this.rawPaths(name).dir, { recursive: true });
    this.#following.set(name, capture);
    this.#unwatched.add(capture); // until its watch begins
    const failed = capture.follow();
    if (failed) this.#log(`logs: cannot watch ${this.rawPaths(name).dir}, polling only: ${failed.message}`);
  }

  /**
   * The server's editor no longer runs: its output is read a few seconds more, for its last lines,
   * then left alone (output files: the reader is dropped; its offsets are saved, so the next
   * follow resumes there). An editor never followed in this run has nothing read here.
   */
  unfollow(name: string): void {
    const tracked = this.#servers.get(name);
    const capture = tracked?.capture;
    if (capture instanceof StreamCapture) return capture.unfollow(DRAIN_MS);
    if (!tracked || !capture?.active) return;
    // Polled until its drain has run (a set the poll walks), then dropped; stop() waits for the last read.
    capture.unfollow(DRAIN_MS, () => {
      if (tracked.capture !== capture) return;
      this.#following.delete(name);
      this.#unwatched.delete(capture);
      tracked.capture = undefined;
      tracked.droppedBefore += capture.dropped;
      capture.stop().catch((err) => this.#reportFailure(tracked, err));
    });
  }

  /** Records a controller event for a tracked server; an unknown name is ignored. */
  event(name: string, level: LogLevel, message: string): void {
    const tracked = this.#servers.get(name);
    if (!tracked || tracked.stopped) return;
    // One entry is one line in server.log, so it can be read back after a restart.
    const entry = this.#entry(tracked, level, 'controller', message.replace(/\r?\n/g, ' '), new Date(this.#clock()).toISOString());
    this.#publish(tracked, [entry]);
    tracked.file.append([formatLogLine(entry)]).catch((err) => this.#reportFailure(tracked, err));
  }

  /** Stops following a server; with remove, deletes its log folder. */
  async untrack(name: string, options: { remove?: boolean } = {}): Promise<void> {
    const tracked = this.#servers.get(name);
    if (tracked) {
      this.#servers.delete(name);
      this.#following.delete(name);
      if (tracked.capture instanceof OutputCapture) this.#unwatched.delete(tracked.capture);
      tracked.stopped = true;
      await tracked.capture?.stop();
      // Lines held for a folder not made yet are written (the next start reads them back), unless it goes.
      if (options.remove) tracked.file.discard();
      else await tracked.file.write().catch((err) => this.#reportFailure(tracked, err));
      await tracked.file.flushed();
    }
    if (options.remove) await fs.promises.rm(this.rawPaths(name).dir, { recursive: true, force: true });
  }

  /** The newest `lines` entries, newest last; name null merges all servers by time (those `include` accepts, when given). */
  tail(name: string | null, lines: number, include?: (name: string) => boolean): LogEntry[] {
    if (name !== null) return this.#servers.get(name)?.ring.last(lines) ?? [];
    const all = [...this.#servers].flatMap(([each, tracked]) => (!include || include(each) ? tracked.ring.last(lines) : []));
    // ISO timestamps sort as strings; the stable sort keeps each server's own order on ties.
    all.sort((a, b) => (a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : 0));
    return lines <= 0 ? [] : all.slice(-lines);
  }

  /** Calls listener with every new entry of one server (or of all, for null); returns the unsubscribe. */
  subscribe(name: string | null, listener: Listener): () => void {
    return subscribeIn(this.#listeners, name, listener);
  }

  /**
   * As subscribe, once per batch: the entries read from one server's output at once (or one
   * event), in order, all of that server. For listeners that do work per delivery (a socket write).
   */
  subscribeBatch(name: string | null, listener: BatchListener): () => void {
    return subscribeIn(this.#batchListeners, name, listener);
  }

  /**
   * The rate limit and the lines it dropped since the start, servers no longer tracked included:
   * GET /health's `logs` section. Totals only: that page is not filtered by who may see which server.
   */
  get state(): { rate_limit: { lines_per_sec: number; burst: number } | null; lines_dropped: number } {
    return {
      rate_limit: this.#linesPerSec > 0 ? { lines_per_sec: this.#linesPerSec, burst: this.#burst } : null,
      lines_dropped: this.#dropped,
    };
  }

  /** Lines of a server's output the rate limit dropped since it was tracked (0 for an unknown name). */
  dropped(name: string): number {
    const tracked = this.#servers.get(name);
    return tracked ? tracked.droppedBefore + (tracked.capture?.dropped ?? 0) : 0;
  }

  /** Stops following every server and the poll timer; subscribers stay registered but hear nothing. */
  async close(): Promise<void> {
    this.#poll.stop();
    await Promise.all([...this.#servers.keys()].map((name) => this.untrack(name)));
  }

  /**
   * What a capture of the server's output needs, made when its first capture is (a server that
   * never runs holds none of it: thousands declared hold a log file and a ring each, nothing more).
   */
  /** A capture of the server's editor output files that tells the hub when its folder's watch begins and ends. */
  #capture(tracked: Tracked, stdout: string, stderr: string): OutputCapture {
    const name = tracked.server.name;
    const capture: OutputCapture = new OutputCapture({
      ...this.#batches(tracked), stdout, stderr, maxFileBytes: this.#maxFileBytes,
      watching: (watched) => {
        if (watched) this.#unwatched.delete(capture);
        else if (this.#following.get(name) === capture) this.#unwatched.add(capture);
      },
    });
    return capture;
  }

  #batches(tracked: Tracked) {
    if (this.#linesPerSec > 0) tracked.limit ??= new LineRateLimit({ linesPerSec: this.#linesPerSec, burst: this.#burst, now: this.#clock });
    return {
      file: tracked.file,
      clock: this.#clock,
      limit: tracked.limit,
      entry: (level: LogLevel, source: LogSource, message: string, timestamp: string) => this.#entry(tracked, level, source, message, timestamp),
      publish: (entries: LogEntry[], messageBytes: readonly number[]) => this.#publish(tracked, entries, messageBytes),
      dropped: (count: number) => (this.#dropped += count),
      failed: (err: unknown) => this.#reportFailure(tracked, err),
      batchIntervalMs: this.#batchIntervalMs,
    };
  }

  #entry(tracked: Tracked, level: LogLevel, source: LogSource, message: string, timestamp: string): LogEntry {
    const { id, displayName, name } = tracked.server;
    return { serverId: id, serverName: displayName, name, level, source, message, timestamp };
  }

  /** Keeps the entries in memory and hands them to subscribers. `messageBytes[i]`: entry i's message in UTF-8 bytes, where known. */
  #publish(tracked: Tracked, entries: LogEntry[], messageBytes: readonly number[] = []): void {
    if (entries.length === 0) return;
    for (let i = 0; i < entries.length; i++) tracked.ring.push(entries[i], entryBytes(entries[i], messageBytes[i]));
    for (const key of [tracked.server.name, null]) {
      for (const listener of this.#listeners.get(key) ?? []) {
        for (const entry of entries) this.#deliver(listener, entry);
      }
      for (const listener of this.#batchListeners.get(key) ?? []) this.#deliver(listener, entries);
    }
  }

  #deliver<T>(listener: (value: T) => void, value: T): void {
    try {
      listener(value);
    } catch (err) {
      // One broken subscriber must not stop capture for the others.
      this.#log(`logs: a subscriber failed: ${(err as Error).stack ?? err}`);
    }
  }

  #reportFailure(tracked: Tracked, err: unknown): void {
    if (tracked.stopped && (err as NodeJS.ErrnoException).code === 'ENOENT') return; // removed while closing
    this.#log(`logs: ${tracked.server.name}: ${(err as Error).message}`);
  }
}

function subscribeIn<T>(listeners: Map<string | null, Set<T>>, name: string | null, listener: T): () => void {
  let set = listeners.get(name);
  if (!set) listeners.set(name, (set = new Set()));
  set.add(listener);
  return () => {
    set.delete(listener);
    if (set.size === 0 && listeners.get(name) === set) listeners.delete(name);
  };
}

/**
 * Where a server's log folder is and the two files its local editor writes its output to, which
 * the hub follows: the process runtime launches its editors writing there.
 */
export function editorOutputFiles(logsDir: string, name: string): { dir: string; stdout: string; stderr: string } {
  // Names are validated as DNS labels upstream; this only guards the join against escaping logsDir.
  if (name === '' || name.startsWith('.') || path.basename(name) !== name) {
    throw new Error(`invalid server name for a log folder: ${JSON.stringify(name)}`);
  }
  const dir = path.join(logsDir, name);
  return { dir, stdout: path.join(dir, STDOUT), stderr: path.join(dir, STDERR) };
}
