// server.log: every entry of one server, formatted, rotated by size so the folder stays bounded.

import fs from 'node:fs';
import { dirname } from 'node:path';

/** The most a file whose folder is not made yet holds in memory before it is written (see RotatingLogFile). */
const HELD_MAX_BYTES = 4096;

/** An append-only text file that rotates to `path.1 … path.N` when it would pass maxBytes. */
export class RotatingLogFile {
  readonly path: string;
  readonly #maxBytes: number;
  readonly #maxFiles: number;
  #size: number | undefined;
  // Appends and rotations run one at a time, in call order, so lines never interleave or reorder.
  #queue: Promise<void> = Promise.resolve();

  /** Whether the first write makes the folder without looking for the file: it is known not to exist. */
  #fresh: boolean;
  /**
   * Lines held in memory while the folder is not made (see `fresh`): a folder costs the file
   * system more than anything else a server seen for the first time needs, and most servers
   * declared ahead of time have one line (they were created) until they first run.
   */
  #held: string[] | undefined;
  #heldBytes = 0;

  /**
   * `fresh`: the folder is known not to exist yet (a server new to the logs folder). Its lines are
   * then held until write() is called (its editor starts, the service stops) or more than
   * HELD_MAX_BYTES of them wait.
   */
  constructor(path: string, maxBytes: number, maxFiles: number, fresh = false) {
    this.path = path;
    this.#maxBytes = maxBytes;
    this.#maxFiles = maxFiles;
    this.#fresh = fresh;
    if (fresh) this.#held = [];
  }

  /** Appends lines (without their newline); resolves once they are in the file (or held: see the constructor). */
  append(lines: string[]): Promise<void> {
    if (lines.length === 0) return this.#queue;
    return this.appendBytes(lines.join('\n') + '\n');
  }

  /** Writes the lines held, making the folder; from then on every append goes to the file. */
  write(): Promise<void> {
    const held = this.#held;
    if (!held) return this.#queue;
    this.#held = undefined;
    return held.length > 0 ? this.appendBytes(held.join('')) : this.#queue;
  }

  /** Forgets the lines held: the folder is being removed. */
  discard(): void {
    if (this.#held) this.#held = [];
  }

  /** Appends whole lines as they are (each ending with its newline), in order with append(). */
  appendBytes(data: string | Buffer): Promise<void> {
    if (data.length === 0) return this.#queue;
    if (this.#held) {
      this.#held.push(data.toString());
      this.#heldBytes += data.length;
      return this.#heldBytes > HELD_MAX_BYTES ? this.write() : this.#queue;
    }
    const next = this.#queue.then(() => this.#write(data));
    // A failed append must not block the ones after it; the caller still sees this one's error.
    this.#queue = next.catch(() => {});
    return next;
  }

  /** Resolves once every append started so far has finished. */
  flushed(): Promise<void> {
    return this.#queue;
  }

  async #write(data: string | Buffer): Promise<void> {
    const bytes = typeof data === 'string' ? Buffer.byteLength(data) : data.length;
    // The first write makes the folder when it is missing (nothing makes it earlier).
    if (this.#fresh) {
      this.#fresh = false;
      await fs.promises.mkdir(dirname(this.path), { recursive: true });
      this.#size = 0;
    }
    this.#size ??= await fs.promises.stat(this.path).then((s) => s.size, async () => {
      await fs.promises.mkdir(dirname(this.path), { recursive: true });
      return 0;
    });
    if (this.#size > 0 && this.#size + bytes > this.#maxBytes) {
      await this.#rotate();
      this.#size = 0;
    }
    await fs.promises.appendFile(this.path, data);
    this.#size += bytes;
  }

  async #rotate(): Promise<void> {
    if (this.#maxFiles < 1) {
      await fs.promises.rm(this.path, { force: true });
      return;
    }
    // Oldest first, so each rename moves into a free slot; path.N is replaced, which bounds the count.
    for (let i = this.#maxFiles - 1; i >= 1; i--) {
      await fs.promises.rename(`${this.path}.${i}`, `${this.path}.${i + 1}`).catch(ignoreMissing);
    }
    await fs.promises.rename(this.path, `${this.path}.1`);
  }
}

/**
 * The newest complete lines of a rotated file set, oldest first, reading at most maxBytes:
 * server.log first, then server.log.1 and on while the budget lasts.
 */
export function readTailLines(path: string, maxFiles: number, maxBytes: number): string[] {
  let lines: string[] = [];
  let budget = maxBytes;
  for (let i = 0; i <= maxFiles && budget > 0; i++) {
    const file = i === 0 ? path : `${path}.${i}`;
    let fd: number;
    try {
      fd = fs.openSync(file, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') break;
      throw err;
    }
    try {
      const size = fs.fstatSync(fd).size;
      const start = Math.max(0, size - budget);
      const buffer = Buffer.alloc(size - start);
      fs.readSync(fd, buffer, 0, buffer.length, start);
      budget -= buffer.length;
      const text = buffer.toString('utf8');
      // Starting mid-file cuts the first line: drop it rather than return a torn line.
      const cut = start > 0 ? text.indexOf('\n') + 1 : 0;
      const whole = start > 0 && cut === 0 ? '' : text.slice(cut);
      const fileLines = whole.split('\n').filter((line) => line !== '');
      lines = fileLines.concat(lines);
      if (start > 0) break;
    } finally {
      fs.closeSync(fd);
    }
  }
  return lines;
}

function ignoreMissing(err: NodeJS.ErrnoException): void {
  if (err.code !== 'ENOENT') throw err;
}
