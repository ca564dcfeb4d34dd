// Where a snapshot puts new file contents: small files are gathered into pack objects of about
// `packBytes` (thousands of small files cost a handful of requests), large ones go in objects
// of their own, in parts of at most `chunkBytes`. Most packs are read whole, straight into their
// buffer (capture.ts), and stored with addObject; the writer gathers the rest. Objects are
// uploaded as they fill.
import { newObjectKey } from './keys.ts';
import type { Uploads } from './store-client.ts';

/** An object in the store; a pack's key is known once it is sealed (the key carries its size). */
export interface StoredObject {
  key: string;
}

/** A run of a file's bytes in an object. */
export interface PartRef {
  object: StoredObject;
  offset: number;
  length: number;
}

interface OpenPack extends StoredObject {
  buffer: Buffer;
  size: number;
}

export class PackWriter {
  private readonly uploads: Uploads;
  private readonly packBytes: number;
  private readonly now: () => number;
  private current: OpenPack | undefined;

  constructor(uploads: Uploads, packBytes: number, now: () => number) {
    this.uploads = uploads;
    this.packBytes = packBytes;
    this.now = now;
  }

  /** Copies a small file's bytes into the open pack (so the caller may reuse its buffer); uploads the pack once it is full. */
  async add(bytes: Buffer): Promise<PartRef> {
    if (this.current && this.current.size + bytes.length > this.current.buffer.length) await this.seal();
    const pack = this.current ??= { key: '', buffer: Buffer.allocUnsafe(Math.max(this.packBytes, bytes.length)), size: 0 };
    const part = { object: pack, offset: pack.size, length: bytes.length };
    bytes.copy(pack.buffer, pack.size);
    pack.size += bytes.length;
    if (pack.size >= this.packBytes) await this.seal();
    return part;
  }

  /** Stores `bytes` as an object of its own. */
  async addObject(bytes: Buffer): Promise<PartRef> {
    const object = { key: newObjectKey(this.now(), bytes.length) };
    await this.uploads.upload(object.key, bytes);
    return { object, offset: 0, length: bytes.length };
  }

  /** Uploads the last, partly filled pack. */
  async flush(): Promise<void> {
    if (this.current) await this.seal();
  }

  private async seal(): Promise<void> {
    const pack = this.current!;
    this.current = undefined;
    pack.key = newObjectKey(this.now(), pack.size);
    const body = pack.buffer.subarray(0, pack.size);
    pack.buffer = Buffer.alloc(0);
    await this.uploads.upload(pack.key, body);
  }
}
