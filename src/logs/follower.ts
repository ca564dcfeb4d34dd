// Follows one raw output file of an editor (editor.out or editor.err) from a persisted offset.

import fs from 'node:fs';
import { writeFileAtomic } from '../core/atomic-write.ts';

// One read takes at most this much; a line longer than this is cut into pieces of this size.
const CHUNK_BYTES = 256 * 1024;
const NEWLINE = 0x0a;
const EMPTY = Buffer.alloc(0);
/** A file kept open is checked against its name at most this often (and only when it has nothing new). */
const CHECK_MS = 1000;
/** The first buffer a kept file is read into: it grows to CHUNK_BYTES once a read fills it. */
const HELD_BUFFER_BYTES = 16 * 1024;

interface Position {
  ino: number;
  offset: number;
}

/**
 * Reads the complete lines appended to a file since the last commit, as bytes: the caller splits
 * them (line-batch.ts), so a read of thousands of lines makes no string per line here. The offset
 * is saved in `offsetPath` only by commit(), after the caller has stored the lines, so a restart
 * of the service resumes exactly there: no line is lost, and none is read twice.
 */
export class RawLogFollower {
  readonly path: string;
  readonly #offsetPath: string;
  #position: Position;
  #committed = '';
  #committedAt = -Infinity;
  #mustCommit = false;
  /** The file kept open by read(hold), a buffer to read it into, and when the name was last checked. */
  #held: { handle: fs.promises.FileHandle; buffer: Buffer; checkedAt: number } | undefined;

  constructor(path: string, offsetPath: string) {
    this.path = path;
    this.#offsetPath = offsetPath;
    this.#position = loadPosition(offsetPath);
    this.#committed = JSON.stringify(this.#position);
  }

  /**
   * The bytes of the new complete lines, up to the last newline read (a partial last line waits
   * for its newline; a line longer than a read comes in pieces); `more` when the file has more.
   * Valid until the next read.
   *
   * `hold`: keep the file open for the next read, for a caller that reads often (a noisy
   * editor's batches): that read is then one call, without open, stat and close. It checks that
   * the name still names the same file, and that the file was not cut, only once it finds
   * nothing new and CHECK_MS have passed since the last check.
   */
  async read(hold = false): Promise<{ data: Buffer; more: boolean }> {
    let reuse: Buffer | undefined;
    if (this.#held) {
      const held = this.#held;
      const before = this.#position.offset;
      const { bytesRead } = await held.handle.read(held.buffer, 0, held.buffer.length, before);
      if (bytesRead > 0 || performance.now() - held.checkedAt < CHECK_MS) {
        const filled = bytesRead === held.buffer.length;
        // Only a whole CHUNK_BYTES without a newline is a piece of a long line; a smaller buffer grows.
        const data = this.#consume(held.buffer.subarray(0, bytesRead), filled && held.buffer.length === CHUNK_BYTES);
        if (filled && held.buffer.length < CHUNK_BYTES) held.buffer = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, held.buffer.length * 4));
        if (!hold) await this.release();
        return { data, more: filled };
      }
      reuse = held.buffer; // checked again below, then read into the same buffer
      await this.release();
    }
    let handle: fs.promises.FileHandle;
    try {
      handle = await fs.promises.open(this.path, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { data: EMPTY, more: false };
      throw err;
    }
    let kept = false;
    try {
      const { ino, size } = await handle.stat();
      // A different file under the same name, or one cut shorter than what we read: start over.
      if (ino !== this.#position.ino || size < this.#position.offset) this.#position = { ino, offset: 0 };
      const length = Math.min(size - this.#position.offset, CHUNK_BYTES);
      let read: { data: Buffer; more: boolean } = { data: EMPTY, more: false };
      if (length > 0) {
        // Only the bytesRead bytes read into it are used: no need to zero it first.
        const buffer = Buffer.allocUnsafe(length);
        const before = this.#position.offset;
        const { bytesRead } = await handle.read(buffer, 0, length, before);
        const data = this.#consume(buffer.subarray(0, bytesRead), bytesRead === CHUNK_BYTES);
        read = { data, more: this.#position.offset > before && this.#position.offset < size };
      }
      if (hold) {
        this.#held = { handle, buffer: reuse ?? Buffer.allocUnsafe(HELD_BUFFER_BYTES), checkedAt: performance.now() };
        kept = true;
      }
      return read;
    } finally {
      if (!kept) await handle.close();
    }
  }

  /**
   * True when a read would find nothing and nothing read waits to be saved: the file ends where
   * the last read stopped (or is not there), looked at with one stat and no open.
   */
  caughtUp(): boolean {
    if (this.#held || this.#mustCommit || JSON.stringify(this.#position) !== this.#committed) return false;
    let stat: fs.Stats | undefined;
    try {
      stat = fs.statSync(this.path, { throwIfNoEntry: false });
    } catch {
      return false; // a read says what is wrong, as it would have without this look
    }
    return stat === undefined || (stat.ino === this.#position.ino && stat.size === this.#position.offset);
  }

  /** Closes the file kept open by read(hold). */
  async release(): Promise<void> {
    const held = this.#held;
    this.#held = undefined;
    await held?.handle.close();
  }

  /**
   * Once the offset is past maxBytes and everything up to the end of the file is a whole line,
   * empties the file in place (copy-truncate: the editor keeps writing through its O_APPEND
   * descriptor) and returns the bytes of the last lines read on the way. Synchronous on purpose: the
   * final read and the truncate follow each other with nothing in between, so the window in
   * which an editor's write could be lost is a few microseconds, as with logrotate's copytruncate.
   */
  truncateIfConsumed(maxBytes: number): Buffer {
    if (this.#position.offset < maxBytes) return EMPTY;
    const fd = fs.openSync(this.path, 'r+');
    try {
      const { ino, size } = fs.fstatSync(fd);
      const rest = size - this.#position.offset;
      // Catch up through read() first when the file was replaced or a lot is still unread.
      if (ino !== this.#position.ino || rest < 0 || rest > CHUNK_BYTES) return EMPTY;
      // Not zeroed: used only when the read filled it (a short read means the file changed under us).
      const buffer = Buffer.allocUnsafe(rest);
      if (fs.readSync(fd, buffer, 0, rest, this.#position.offset) !== rest) return EMPTY;
      if (rest > 0 && buffer[rest - 1] !== NEWLINE) return EMPTY; // mid-line: try again later
      fs.ftruncateSync(fd, 0);
      this.#position = { ino, offset: 0 };
      // The saved offset would now point past the end of what the file will hold again: save it soon.
      this.#mustCommit = true;
      return buffer;
    } finally {
      fs.closeSync(fd);
    }
  }

  /**
   * Saves the offset of everything returned so far (atomically: temporary file, then rename).
   * `minIntervalMs`: not if the last save was more recent than that (a crash may then repeat a
   * little more output after a restart, never lose any), unless the file was emptied since.
   */
  async commit(minIntervalMs = 0): Promise<void> {
    const text = JSON.stringify(this.#position);
    if (text === this.#committed) return;
    if (!this.#mustCommit && performance.now() - this.#committedAt < minIntervalMs) return;
    this.#mustCommit = false;
    // Not flushed to disk: an offset lost in a crash (or left unreadable) makes the follower read
    // from an earlier place, or the start, so output may repeat but is never lost.
    await writeFileAtomic(this.#offsetPath, text);
    this.#committed = text;
    this.#committedAt = performance.now();
  }

  #consume(buffer: Buffer, full: boolean): Buffer {
    const end = buffer.lastIndexOf(NEWLINE);
    if (end < 0) {
      if (!full) return EMPTY; // a partial line: wait for the rest
      this.#position.offset += buffer.length;
      return buffer; // a piece of a line longer than a read
    }
    this.#position.offset += end + 1;
    return buffer.subarray(0, end + 1);
  }
}

function loadPosition(offsetPath: string): Position {
  try {
    const saved = JSON.parse(fs.readFileSync(offsetPath, 'utf8')) as Partial<Position>;
    if (Number.isSafeInteger(saved.ino) && Number.isSafeInteger(saved.offset)) {
      return { ino: saved.ino as number, offset: saved.offset as number };
    }
  } catch {
    // Missing or unreadable: read the file from its start.
  }
  return { ino: -1, offset: 0 };
}
