// The log hub: follows each editor's output files, records controller events, keeps a bounded
// history per server in memory and on disk, and tells subscribers about every new entry.

import fs from 'node:fs';
import path from 'node:path';
import { formatLogLine, parseLogLine, type LogEntry, type LogLevel, type TrackedServer } from './entry.ts';
import { RawLogFollower } from './follower.ts';
import { RotatingLogFile, readTailLines } from './log-file.ts';

export interface LogHubOptions {
  logsDir: string;
  /** In-memory history per server, bounded in bytes. Default 1 MiB. */
  maxBufferBytes?: number;
  /** Size at which server.log rotates and editor.out/err are emptied. Default 5 MiB. */
  maxFileBytes?: number;
  /** Rotated server.log files kept (server.log.1 … .N). Default 3. */
  maxFiles?: number;
  /** Fallback poll of the output files, for changes fs.watch misses. Default 1000 ms. */
  pollIntervalMs?: number;
  /** Where failures to read or write log files are reported. Default console.error. */
  log?: (message: string) => void;
}

// Defined in entry.ts; re-exported for the modules that import it from here.
export type { TrackedServer };

type Listener = (entry: LogEntry) => void;

// An entry's message is counted in UTF-8 bytes; this stands for the rest of the object
// (timestamp string, fields, array slot). The ids and names are shared strings.
const ENTRY_OVERHEAD_BYTES = 100;

const entryBytes = (entry: LogEntry): number => Buffer.byteLength(entry.message) + ENTRY_OVERHEAD_BYTES;

/** A server's recent entries, oldest first, dropping the oldest once over maxBytes. */
class EntryRing {
  readonly #maxBytes: number;
  #entries: LogEntry[] = [];
  /** entryBytes of each entry, at the same index: counted once on push, subtracted on eviction. */
  #sizes: number[] = [];
  #start = 0;
  #bytes = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  push(entry: LogEntry): void {
    const size = entryBytes(entry);
    this.#entries.push(entry);
    this.#sizes.push(size);
    this.#bytes += size;
    while (this.#bytes > this.#maxBytes && this.#entries.length - this.#start > 1) {
      this.#bytes -= this.#sizes[this.#start];
      this.#start++;
    }
    // Drop the consumed head now and then instead of shifting on every push.
    if (this.#start > 1024 && this.#start * 2 > this.#entries.length) {
      this.#entries = this.#entries.slice(this.#start);
      this.#sizes = this.#sizes.slice(this.#start);
      this.#start = 0;
    }
  }

  last(count: number): LogEntry[] {
    if (count <= 0) return [];
    return this.#entries.slice(Math.max(this.#start, this.#entries.length - count));
  }
}

interface Tracked {
  server: TrackedServer;
  file: RotatingLogFile;
  streams: { follower: RawLogFollower; level: LogLevel }[];
  ring: EntryRing;
  watcher: fs.FSWatcher | undefined;
  pumping: Promise<void> | undefined;
  dirty: boolean;
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

const STDOUT = 'editor.out';
const STDERR = 'editor.err';

/** Log capture for every tracked server: one instance per service. */
export class LogHub {
  readonly #logsDir: string;
  readonly #maxBufferBytes: number;
  readonly #maxFileBytes: number;
  readonly #maxFiles: number;
  readonly #log: (message: string) => void;
  readonly #servers = new Map<string, Tracked>();
  readonly #listeners = new Map<string | null, Set<Listener>>();
  readonly #pollTimer: NodeJS.Timeout;

  constructor(options: LogHubOptions) {
    this.#logsDir = options.logsDir;
    this.#maxBufferBytes = options.maxBufferBytes ?? 1024 * 1024;
    this.#maxFileBytes = options.maxFileBytes ?? 5 * 1024 * 1024;
    this.#maxFiles = options.maxFiles ?? 3;
    this.#log = options.log ?? ((message) => console.error(message));
    this.#pollTimer = setInterval(() => {
      for (const tracked of this.#servers.values()) this.#pump(tracked);
    }, options.pollIntervalMs ?? 1000);
    // The hub alone must not keep the process alive.
    this.#pollTimer.unref();
  }

  /** The folder of a server's logs and the files the runtime opens (O_APPEND) for the editor. */
  rawPaths(name: string): { dir: string; stdout: string; stderr: string } {
    // Names are validated as DNS labels upstream; this only guards the join against escaping logsDir.
    if (name === '' || name.startsWith('.') || path.basename(name) !== name) {
      throw new Error(`invalid server name for a log folder: ${JSON.stringify(name)}`);
    }
    const dir = path.join(this.#logsDir, name);
    return { dir, stdout: path.join(dir, STDOUT), stderr: path.join(dir, STDERR) };
  }

  /**
   * Starts following a server's editor.out (INFO) and editor.err (WARN). Idempotent; a second
   * call only updates the id and display name. Reloads history from server.log, so after a
   * service restart tail() answers as before and reading resumes at the saved offsets.
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
    const { dir, stdout, stderr } = this.rawPaths(server.name);
    fs.mkdirSync(dir, { recursive: true });
    // Create the output files so they can be watched before the editor first starts.
    for (const file of [stdout, stderr]) fs.closeSync(fs.openSync(file, 'a'));

    const tracked: Tracked = {
      server: ownStrings(server),
      file: new RotatingLogFile(path.join(dir, 'server.log'), this.#maxFileBytes, this.#maxFiles),
      streams: [
        { follower: new RawLogFollower(stdout, `${stdout}.offset`), level: 'INFO' },
        { follower: new RawLogFollower(stderr, `${stderr}.offset`), level: 'WARN' },
      ],
      ring: new EntryRing(this.#maxBufferBytes),
      watcher: undefined,
      pumping: undefined,
      dirty: false,
      stopped: false,
    };
    for (const line of readTailLines(tracked.file.path, this.#maxFiles, this.#maxBufferBytes)) {
      const entry = parseLogLine(line, tracked.server);
      if (entry) tracked.ring.push(entry);
    }
    this.#servers.set(server.name, tracked);

    try {
      // Watch the folder, not the files, so a file the runtime re-creates is still seen.
      tracked.watcher = fs.watch(dir, { persistent: false }, (_event, file) => {
        if (file === STDOUT || file === STDERR) this.#pump(tracked);
      });
      tracked.watcher.on('error', () => {
        tracked.watcher?.close(); // e.g. the folder was removed; the poll carries on
        tracked.watcher = undefined;
      });
    } catch (err) {
      this.#log(`logs: cannot watch ${dir}, polling only: ${(err as Error).message}`);
    }
    this.#pump(tracked);
  }

  /** Records a controller event for a tracked server; an unknown name is ignored. */
  event(name: string, level: LogLevel, message: string): void {
    const tracked = this.#servers.get(name);
    if (!tracked || tracked.stopped) return;
    // One entry is one line in server.log, so it can be read back after a restart.
    const entry = this.#record(tracked, level, 'controller', message.replace(/\r?\n/g, ' '));
    tracked.file.append([formatLogLine(entry)]).catch((err) => this.#reportFailure(tracked, err));
  }

  /** Stops following a server; with remove, deletes its log folder. */
  async untrack(name: string, options: { remove?: boolean } = {}): Promise<void> {
    const tracked = this.#servers.get(name);
    if (tracked) {
      this.#servers.delete(name);
      tracked.stopped = true;
      tracked.watcher?.close();
      await tracked.pumping;
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
    let set = this.#listeners.get(name);
    if (!set) this.#listeners.set(name, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.#listeners.get(name) === set) this.#listeners.delete(name);
    };
  }

  /** Stops following every server and the poll timer; subscribers stay registered but hear nothing. */
  async close(): Promise<void> {
    clearInterval(this.#pollTimer);
    await Promise.all([...this.#servers.keys()].map((name) => this.untrack(name)));
  }

  #record(tracked: Tracked, level: LogLevel, source: LogEntry['source'], message: string): LogEntry {
    const entry: LogEntry = {
      serverId: tracked.server.id,
      serverName: tracked.server.displayName,
      name: tracked.server.name,
      level,
      source,
      message,
      timestamp: new Date().toISOString(),
    };
    tracked.ring.push(entry);
    for (const key of [tracked.server.name, null]) {
      for (const listener of this.#listeners.get(key) ?? []) {
        try {
          listener(entry);
        } catch (err) {
          // One broken subscriber must not stop capture for the others.
          this.#log(`logs: a subscriber failed: ${(err as Error).stack ?? err}`);
        }
      }
    }
    return entry;
  }

  /** Reads new output of a server; wake-ups while a read runs are folded into one more pass. */
  #pump(tracked: Tracked): void {
    if (tracked.stopped) return;
    if (tracked.pumping) {
      tracked.dirty = true;
      return;
    }
    tracked.pumping = this.#drain(tracked)
      .catch((err) => this.#reportFailure(tracked, err))
      .finally(() => {
        tracked.pumping = undefined;
      });
  }

  async #drain(tracked: Tracked): Promise<void> {
    do {
      tracked.dirty = false;
      for (const { follower, level } of tracked.streams) {
        let more = true;
        while (more && !tracked.stopped) {
          const read = await follower.read();
          more = read.more;
          await this.#store(tracked, level, read.lines, follower);
        }
        if (!tracked.stopped) {
          await this.#store(tracked, level, follower.truncateIfConsumed(this.#maxFileBytes), follower);
        }
      }
    } while (tracked.dirty && !tracked.stopped);
  }

  // Entries first reach server.log and only then is the offset saved: a crash in between
  // can repeat those lines after a restart but never lose them.
  async #store(tracked: Tracked, level: LogLevel, lines: string[], follower: RawLogFollower): Promise<void> {
    const formatted = lines.map((line) => formatLogLine(this.#record(tracked, level, 'server', line)));
    await tracked.file.append(formatted);
    await follower.commit();
  }

  #reportFailure(tracked: Tracked, err: unknown): void {
    if (tracked.stopped && (err as NodeJS.ErrnoException).code === 'ENOENT') return; // removed while closing
    this.#log(`logs: ${tracked.server.name}: ${(err as Error).message}`);
  }
}
