// The audit trail's writer: one JSON line per entry, appended to audit.jsonl with one write each
// (the file is opened O_APPEND, so a line is never interleaved), flushed to disk in batches (an
// fsync at most every second, and at close), rotated by size with the chain going on across files.
// At start the tail is read back so the chain continues; a last line cut short by a crash is set
// aside in a file of its own and said so in the log and in the trail itself, never chained over.
import {
  closeSync, fstatSync, fsync, fsyncSync, ftruncateSync, mkdirSync, openSync, readSync, renameSync, rmSync, writeFileSync, writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { GENESIS, sealEntry, type AuditEntry, type AuditInput } from './entry.ts';
import { CURRENT_FILE, rotatedFiles, rotatedName } from './files.ts';

/** A file is rotated once the next line would take it past this (8 MiB). */
export const DEFAULT_MAX_FILE_BYTES = 8 * 1024 * 1024;
/** Rotated files kept in the data folder (the persistence target keeps every one). */
export const DEFAULT_KEEP_FILES = 16;
/** How long an appended line may wait for its fsync. */
const FSYNC_DELAY_MS = 1000;
/** How much of a file's end is read at start to find its last entry (an entry is well under 2 KiB). */
const TAIL_BYTES = 64 * 1024;

export interface AuditLogOptions {
  dir: string;
  maxFileBytes?: number;
  keepFiles?: number;
  now?: () => Date;
  log: (message: string) => void;
  /** A file was rotated (its final path): the archive copies it. */
  onRotated?: (path: string) => void;
}

/** What GET /health and GET /audit say of the trail. */
export interface AuditState {
  dir: string;
  last_seq: number;
  last_hash: string;
  /** Set when the start found a torn last line: where it was set aside. */
  torn?: string;
}

export class AuditLog {
  readonly dir: string;
  readonly #options: AuditLogOptions;
  readonly #maxBytes: number;
  #fd: number;
  #size: number;
  #seq: number;
  #hash: string;
  /** The seq of the current file's first entry (its name once rotated). */
  #firstSeq: number | undefined;
  #fsyncTimer: NodeJS.Timeout | undefined;
  #torn: string | undefined;
  #closed = false;
  readonly #listeners = new Set<(entry: AuditEntry) => void>();

  private constructor(options: AuditLogOptions, fd: number, size: number, tail: Tail) {
    this.dir = options.dir;
    this.#options = options;
    this.#maxBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
    this.#fd = fd;
    this.#size = size;
    this.#seq = tail.seq;
    this.#hash = tail.hash;
    this.#firstSeq = tail.firstSeq;
  }

  /** Opens the trail in `options.dir` (made if missing) and continues its chain. */
  static open(options: AuditLogOptions): AuditLog {
    mkdirSync(options.dir, { recursive: true, mode: 0o700 });
    const path = join(options.dir, CURRENT_FILE);
    const fd = openSync(path, 'a+', 0o600);
    const torn = setAsideTornLine(fd, options.dir, (options.now ?? (() => new Date()))());
    let tail = readTail(fd);
    if (!tail) {
      // A fresh current file: the chain goes on from the newest rotated one.
      const rotated = rotatedFiles(options.dir).at(-1);
      if (rotated) {
        const rfd = openSync(join(options.dir, rotated), 'r');
        try {
          tail = readTail(rfd);
        } finally {
          closeSync(rfd);
        }
      }
      if (tail) tail = { ...tail, firstSeq: undefined };
    }
    const audit = new AuditLog(options, fd, fstatSync(fd).size, tail ?? { seq: 0, hash: GENESIS, firstSeq: undefined });
    if (torn) {
      audit.#torn = torn.file;
      const said = `audit trail: the last line of ${CURRENT_FILE} (${torn.bytes} bytes) was cut short by an interrupted write; it was set aside in ${torn.file} and the chain goes on from entry ${audit.#seq}`;
      options.log(said);
      audit.record({ actor: 'controller', door: 'controller', action: 'audit-recovered', outcome: 'failed', code: 'TORN_LINE', detail: said });
    }
    return audit;
  }

  /** Appends one entry, chained to the last; returns it. */
  record(input: AuditInput): AuditEntry {
    if (this.#closed) throw new Error('the audit trail is closed');
    const entry = sealEntry(input, this.#seq + 1, this.#hash, (this.#options.now ?? (() => new Date()))());
    const line = Buffer.from(`${JSON.stringify(entry)}\n`);
    if (this.#size > 0 && this.#size + line.length > this.#maxBytes) this.#rotate();
    writeSync(this.#fd, line);
    this.#size += line.length;
    this.#seq = entry.seq;
    this.#hash = entry.hash;
    this.#firstSeq ??= entry.seq;
    this.#scheduleFsync();
    for (const listener of this.#listeners) listener(entry);
    return entry;
  }

  /** Calls `listener` with each entry appended from now on; returns its removal. */
  onEntry(listener: (entry: AuditEntry) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  state(): AuditState {
    return { dir: this.dir, last_seq: this.#seq, last_hash: this.#hash, ...(this.#torn ? { torn: this.#torn } : {}) };
  }

  /** Flushes what was appended to disk now. */
  flush(): void {
    if (this.#closed) return;
    clearTimeout(this.#fsyncTimer);
    this.#fsyncTimer = undefined;
    fsyncSync(this.#fd);
  }

  close(): void {
    if (this.#closed) return;
    this.flush();
    this.#closed = true;
    this.#listeners.clear();
    closeSync(this.#fd);
  }

  #scheduleFsync(): void {
    if (this.#fsyncTimer) return;
    const fd = this.#fd;
    this.#fsyncTimer = setTimeout(() => {
      this.#fsyncTimer = undefined;
      if (!this.#closed && fd === this.#fd) fsync(fd, (error) => error && this.#options.log(`audit trail: fsync failed: ${error.message}`));
    }, FSYNC_DELAY_MS);
    this.#fsyncTimer.unref();
  }

  /** The current file becomes audit-<its first seq>.jsonl and a new one is begun; the oldest beyond keepFiles go. */
  #rotate(): void {
    this.flush();
    closeSync(this.#fd);
    const rotated = join(this.dir, rotatedName(this.#firstSeq ?? this.#seq));
    renameSync(join(this.dir, CURRENT_FILE), rotated);
    this.#fd = openSync(join(this.dir, CURRENT_FILE), 'a+', 0o600);
    this.#size = 0;
    this.#firstSeq = undefined;
    const files = rotatedFiles(this.dir);
    for (const old of files.slice(0, Math.max(0, files.length - (this.#options.keepFiles ?? DEFAULT_KEEP_FILES)))) {
      rmSync(join(this.dir, old), { force: true });
    }
    this.#options.onRotated?.(rotated);
  }
}

interface Tail {
  seq: number;
  hash: string;
  firstSeq: number | undefined;
}

/** The last entry's seq and hash, and the first entry's seq, of an open file; undefined when it holds none. */
function readTail(fd: number): Tail | undefined {
  const size = fstatSync(fd).size;
  if (size === 0) return undefined;
  const lines = readRange(fd, Math.max(0, size - TAIL_BYTES), size).split('\n').filter((line) => line !== '');
  const last = parseLine(lines.at(-1));
  if (!last) return undefined;
  const first = parseLine(readRange(fd, 0, Math.min(size, 4096)).split('\n')[0]);
  return { seq: last.seq, hash: last.hash, firstSeq: first?.seq };
}

function parseLine(line: string | undefined): { seq: number; hash: string } | undefined {
  if (!line) return undefined;
  try {
    const value = JSON.parse(line) as { seq?: unknown; hash?: unknown };
    return typeof value.seq === 'number' && typeof value.hash === 'string' ? { seq: value.seq, hash: value.hash } : undefined;
  } catch {
    return undefined;
  }
}

function readRange(fd: number, from: number, to: number): string {
  return readBytes(fd, from, to).toString('utf8');
}

function readBytes(fd: number, from: number, to: number): Buffer {
  const buffer = Buffer.alloc(to - from);
  let read = 0;
  while (read < buffer.length) {
    const n = readSync(fd, buffer, read, buffer.length - read, from + read);
    if (n === 0) break;
    read += n;
  }
  return buffer.subarray(0, read);
}

/**
 * A last line without its newline (a crash between write and the end of it), or one that is not
 * an entry: its bytes go to torn-<time>.txt beside the trail and the file is cut back to the
 * last whole line. Undefined when the file ends cleanly.
 */
function setAsideTornLine(fd: number, dir: string, now: Date): { file: string; bytes: number } | undefined {
  const size = fstatSync(fd).size;
  if (size === 0) return undefined;
  const from = Math.max(0, size - TAIL_BYTES);
  const tail = readBytes(fd, from, size);
  const ended = tail[tail.length - 1] === 0x0a;
  const cut = tail.lastIndexOf(0x0a, ended ? tail.length - 2 : tail.length - 1);
  const last = tail.subarray(cut + 1, ended ? tail.length - 1 : tail.length);
  if (ended && parseLine(last.toString('utf8'))) return undefined;
  const torn = tail.subarray(cut + 1);
  const file = `torn-${now.toISOString().replace(/[:.]/g, '-')}.txt`;
  writeFileSync(join(dir, file), torn, { mode: 0o600 });
  ftruncateSync(fd, size - torn.length);
  return { file, bytes: torn.length };
}
