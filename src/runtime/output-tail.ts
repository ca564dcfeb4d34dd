// An editor process's output, as the process workload streams it: two files it writes to
// (editor.out, editor.err), followed line by line.
import { promises as fs } from 'node:fs';

/** Where an editor's own output goes: two files the log hub follows (editor.out, editor.err). */
export type OutputFiles = (name: string) => { stdout: string; stderr: string };

/** Complete lines appended to a file since the last read; a file replaced or cut is read from its start. */
export class Tail {
  readonly #path: string;
  readonly stream: 'stdout' | 'stderr';
  #ino = -1;
  #offset = 0;
  #partial = '';

  constructor(path: string, stream: 'stdout' | 'stderr') {
    this.#path = path;
    this.stream = stream;
  }

  async skipToEnd(): Promise<void> {
    const stat = await fs.stat(this.#path).catch(() => undefined);
    if (stat) [this.#ino, this.#offset] = [stat.ino, stat.size];
  }

  async read(): Promise<string[]> {
    const handle = await fs.open(this.#path, 'r').catch(() => undefined);
    if (!handle) return [];
    try {
      const { ino, size } = await handle.stat();
      if (ino !== this.#ino || size < this.#offset) [this.#ino, this.#offset, this.#partial] = [ino, 0, ''];
      const length = Math.min(size - this.#offset, 1 << 20);
      if (length <= 0) return [];
      const buffer = Buffer.allocUnsafe(length);
      const { bytesRead } = await handle.read(buffer, 0, length, this.#offset);
      this.#offset += bytesRead;
      const lines = (this.#partial + buffer.toString('utf8', 0, bytesRead)).split('\n');
      this.#partial = lines.pop() ?? '';
      return lines;
    } finally {
      await handle.close();
    }
  }
}
