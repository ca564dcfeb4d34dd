// The engine's local copy of each server's last index, with the stat of every file as this
// machine last saw it: the next snapshot reads only files whose (size, mtime, inode, mode)
// changed, and needs no request to fetch the index. Losing it costs time, never data.
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { parseIndex, serializeIndex, type SnapshotIndex } from './index-file.ts';

export class IndexCache {
  private readonly dir: string;
  private readonly log: (message: string) => void;

  constructor(dir: string, log: (message: string) => void) {
    this.dir = dir;
    this.log = log;
  }

  async read(name: string): Promise<SnapshotIndex | undefined> {
    const file = this.file(name);
    try {
      return parseIndex(await fs.readFile(file), file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.log(`ignoring the cached index ${file}: ${(error as Error).message}`);
      return undefined;
    }
  }

  /** `index`: the index, or its bytes when serialised already. */
  async write(name: string, index: SnapshotIndex | Buffer): Promise<void> {
    const file = this.file(name);
    const temp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      await fs.mkdir(this.dir, { recursive: true });
      await fs.writeFile(temp, Buffer.isBuffer(index) ? index : serializeIndex(index));
      await fs.rename(temp, file);
    } catch (error) {
      await fs.rm(temp, { force: true }).catch(() => undefined);
      this.log(`could not cache the index of ${name} in ${this.dir} (the next snapshot reads every file again): ${(error as Error).message}`);
    }
  }

  async remove(name: string): Promise<void> {
    await fs.rm(this.file(name), { force: true }).catch(() => undefined);
  }

  private file(name: string): string {
    return join(this.dir, `${name}.index.json`);
  }
}
