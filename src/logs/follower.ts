// Follows one raw output file of an editor (editor.out or editor.err) from a persisted offset.

import fs from 'node:fs';

// One read takes at most this much; a line longer than this is cut into pieces of this size.
const CHUNK_BYTES = 256 * 1024;
const NEWLINE = 0x0a;

interface Position {
  ino: number;
  offset: number;
}

/**
 * Reads the complete lines appended to a file since the last commit. The offset is saved in
 * `offsetPath` only by commit(), after the caller has stored the lines, so a restart of the
 * service resumes exactly there: no line is lost, and none is read twice.
 */
export class RawLogFollower {
  readonly path: string;
  readonly #offsetPath: string;
  #position: Position;
  #committed = '';

  constructor(path: string, offsetPath: string) {
    this.path = path;
    this.#offsetPath = offsetPath;
    this.#position = loadPosition(offsetPath);
    this.#committed = JSON.stringify(this.#position);
  }

  /** New complete lines (a partial last line waits for its newline); `more` when the file has more. */
  async read(): Promise<{ lines: string[]; more: boolean }> {
    let handle: fs.promises.FileHandle;
    try {
      handle = await fs.promises.open(this.path, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { lines: [], more: false };
      throw err;
    }
    try {
      const { ino, size } = await handle.stat();
      // A different file under the same name, or one cut shorter than what we read: start over.
      if (ino !== this.#position.ino || size < this.#position.offset) this.#position = { ino, offset: 0 };
      const length = Math.min(size - this.#position.offset, CHUNK_BYTES);
      if (length <= 0) return { lines: [], more: false };
      // Only the bytesRead bytes read into it are used: no need to zero it first.
      const buffer = Buffer.allocUnsafe(length);
      const before = this.#position.offset;
      const { bytesRead } = await handle.read(buffer, 0, length, before);
      const lines = this.#consume(buffer.subarray(0, bytesRead), bytesRead === CHUNK_BYTES);
      return { lines, more: this.#position.offset > before && this.#position.offset < size };
    } finally {
      await handle.close();
    }
  }

  /**
   * Once the offset is past maxBytes and everything up to the end of the file is a whole line,
   * empties the file in place (copy-truncate: the editor keeps writing through its O_APPEND
   * descriptor) and returns the last lines read on the way. Synchronous on purpose: the
   * final read and the truncate follow each other with nothing in between, so the window in
   * which an editor's write could be lost is a few microseconds, as with logrotate's copytruncate.
   */
  truncateIfConsumed(maxBytes: number): string[] {
    if (this.#position.offset < maxBytes) return [];
    const fd = fs.openSync(this.path, 'r+');
    try {
      const { ino, size } = fs.fstatSync(fd);
      const rest = size - this.#position.offset;
      // Catch up through read() first when the file was replaced or a lot is still unread.
      if (ino !== this.#position.ino || rest < 0 || rest > CHUNK_BYTES) return [];
      // Not zeroed: used only when the read filled it (a short read means the file changed under us).
      const buffer = Buffer.allocUnsafe(rest);
      if (fs.readSync(fd, buffer, 0, rest, this.#position.offset) !== rest) return [];
      if (rest > 0 && buffer[rest - 1] !== NEWLINE) return []; // mid-line: try again later
      fs.ftruncateSync(fd, 0);
      this.#position = { ino, offset: 0 };
      return splitLines(buffer);
    } finally {
      fs.closeSync(fd);
    }
  }

  /** Saves the offset of everything returned so far (atomically: temporary file, then rename). */
  async commit(): Promise<void> {
    const text = JSON.stringify(this.#position);
    if (text === this.#committed) return;
    const temporary = `${this.#offsetPath}.tmp`;
    await fs.promises.writeFile(temporary, text);
    await fs.promises.rename(temporary, this.#offsetPath);
    this.#committed = text;
  }

  #consume(buffer: Buffer, full: boolean): string[] {
    const end = buffer.lastIndexOf(NEWLINE);
    if (end < 0) {
      if (!full) return []; // a partial line: wait for the rest
      this.#position.offset += buffer.length;
      return [buffer.toString('utf8')];
    }
    this.#position.offset += end + 1;
    return splitLines(buffer.subarray(0, end + 1));
  }
}

/** The lines of a buffer that ends with a newline; blank lines carry nothing and are dropped. */
function splitLines(buffer: Buffer): string[] {
  const lines: string[] = [];
  for (const line of buffer.toString('utf8').split('\n')) {
    const text = line.endsWith('\r') ? line.slice(0, -1) : line;
    if (text.trim() !== '') lines.push(text);
  }
  return lines;
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
