// Captures one changed file for a snapshot: reads it (again, up to `attempts` times, when it
// changes while being read; then keeps what was read and says so), hashes it, and stores its
// bytes unless the same content is stored already (the `known` map, by sha256).
import { createHash } from 'node:crypto';
import type { Stats } from 'node:fs';
import { sha256Hex } from './hash.ts';
import type { PackWriter, PartRef } from './packs.ts';
import { readAll, readChecked, readChunks, type AfterRead, type FileState } from './read-file.ts';
import type { Slicer } from './slices.ts';
import type { WalkedFile } from './walk.ts';

export interface CaptureOptions {
  packs: PackWriter;
  /** Content already stored, by sha256: the previous snapshot's, and what this one added. */
  known: Map<string, PartRef[]>;
  smallFileBytes: number;
  chunkBytes: number;
  attempts: number;
  afterRead?: AfterRead;
  /** Buffers of smallFileBytes to read small files into. */
  scratch: ScratchBuffers;
  /** Yields to the event loop between slices of synchronous reading. */
  slicer: Slicer;
  /** A file modified at or after this time (ms) is read again next time even with the same stat: a change within the clock's granularity would not show. */
  racyFrom: number;
}

export type Capture =
  | { kind: 'file'; sha256: string; parts: PartRef[]; size: number; mode: number; mtimeMs: number; ino?: number; changedWhileRead: boolean }
  | { kind: 'gone' }
  | { kind: 'unreadable' };

const HASH_READ_BYTES = 1024 * 1024;

/** Reusable read buffers: reading thousands of small files allocates a handful, not thousands. */
export class ScratchBuffers {
  private readonly size: number;
  private readonly free: Buffer[] = [];

  constructor(size: number) {
    this.size = size;
  }

  take(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafe(this.size);
  }

  give(buffer: Buffer): void {
    this.free.push(buffer);
  }
}

export async function captureFile(file: WalkedFile, options: CaptureOptions): Promise<Capture> {
  let before: FileState = file;
  for (let attempt = 1; ; attempt++) {
    const last = attempt >= options.attempts;
    if (before.size <= options.chunkBytes) {
      // A small file is read into a buffer lent for the time of its capture (its bytes are copied into a pack).
      const scratch = before.size < options.smallFileBytes ? options.scratch.take() : undefined;
      try {
        const outcome = await readChecked(file.abs, before, readAll(scratch), options.afterRead, attempt, options.slicer);
        if (outcome.kind !== 'read') return outcome;
        if (!outcome.stable && !last) {
          before = outcome.after;
          continue;
        }
        const bytes = outcome.value;
        const sha256 = await sha256Hex(bytes);
        let parts = options.known.get(sha256);
        if (!parts) {
          parts = bytes.length === 0 ? [] : [bytes.length < options.smallFileBytes ? await options.packs.add(bytes) : await options.packs.addObject(bytes)];
          options.known.set(sha256, parts);
        }
        return captured(sha256, parts, bytes.length, outcome.after, outcome.stable, options);
      } finally {
        if (scratch) options.scratch.give(scratch);
      }
    }

    // Larger than one object: hash it first, and read it again to upload only when its content is new.
    const hashed = await readChecked(file.abs, before, async (fd, size) => {
      const hash = createHash('sha256');
      const bytes = await readChunks(fd, size, HASH_READ_BYTES, async (chunk) => {
        hash.update(chunk);
        while (options.slicer.due()) await options.slicer.pass();
      });
      return { value: { sha256: hash.digest('hex'), bytes }, bytes };
    }, options.afterRead, attempt, options.slicer);
    if (hashed.kind !== 'read') return hashed;
    if (!hashed.stable && !last) {
      before = hashed.after;
      continue;
    }
    const known = options.known.get(hashed.value.sha256);
    if (known) return captured(hashed.value.sha256, known, hashed.value.bytes, hashed.after, hashed.stable, options);

    const stored = await readChecked(file.abs, hashed.after, async (fd, size) => {
      const hash = createHash('sha256');
      const parts: PartRef[] = [];
      const bytes = await readChunks(fd, size, options.chunkBytes, async (chunk) => {
        hash.update(chunk);
        while (options.slicer.due()) await options.slicer.pass();
        parts.push(await options.packs.addObject(chunk));
      });
      return { value: { sha256: hash.digest('hex'), parts, bytes }, bytes };
    }, undefined, attempt, options.slicer);
    if (stored.kind !== 'read') return stored;
    const stable = hashed.stable && stored.stable && stored.value.sha256 === hashed.value.sha256;
    if (!stable && !last) {
      before = stored.after;
      continue;
    }
    options.known.set(stored.value.sha256, stored.value.parts);
    return captured(stored.value.sha256, stored.value.parts, stored.value.bytes, stored.after, stable, options);
  }
}

function captured(sha256: string, parts: PartRef[], size: number, after: Stats, stable: boolean, options: CaptureOptions): Capture {
  return {
    kind: 'file', sha256, parts, size,
    mode: after.mode & 0o7777,
    mtimeMs: after.mtimeMs,
    ...(stable && after.mtimeMs < options.racyFrom && { ino: after.ino }),
    changedWhileRead: !stable,
  };
}
