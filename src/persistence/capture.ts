// Captures the files a snapshot must read (new, or changed since the last one): reads and hashes
// them in batches (read-batch.ts), in worker threads when there is much to read, else on the
// event loop's thread in short slices; stores the bytes of content not stored before (the
// `known` map, by hash) in packs or objects of their own. A file larger than one object is
// streamed: hashed first, and read again to upload only when its content is new.
import type { Stats } from 'node:fs';
import { contentHasher } from './hash.ts';
import type { Part } from './index-file.ts';
import type { PackWriter, PartRef, StoredObject } from './packs.ts';
import { planBatches, readBatch, type BatchRead } from './read-batch.ts';
import { readChecked, readChunks, type AfterRead, type FileState } from './read-file.ts';
import type { Slicer } from './slices.ts';
import type { WalkedFile } from './walk.ts';
import { PoolFailure, type WorkPool } from './work-pool.ts';

/** Where content is: parts in the previous snapshot's objects table, or references to objects this snapshot writes. */
export type Stored = { parts: Part[] } | { refs: PartRef[] };

export interface CaptureOptions {
  packs: PackWriter;
  /** Content already stored, by hash: the previous snapshot's, and what this one added. */
  known: { get(hash: string): Stored | undefined; set(hash: string, stored: Stored): void };
  packBytes: number;
  smallFileBytes: number;
  chunkBytes: number;
  attempts: number;
  afterRead?: AfterRead;
  /** Yields to the event loop between slices of synchronous reading. */
  slicer: Slicer;
  /** A file modified at or after this time (ms) is read again next time even with the same stat: a change within the clock's granularity would not show. */
  racyFrom: number;
  /** Reads and hashes in these workers; undefined: on this thread. */
  pool?: WorkPool;
  log: (message: string) => void;
}

export type Capture =
  | { kind: 'file'; hash: string; stored: Stored; size: number; mode: number; mtimeMs: number; ino?: number; changedWhileRead: boolean }
  | { kind: 'gone' }
  | { kind: 'unreadable' };

/** Tasks handed to the workers ahead of the one being stored (each up to a pack's bytes). */
const AHEAD_PER_WORKER = 1;
/** Packs of small files are at least this large when cut smaller to spread the reading over the workers. */
const MIN_PACK_BYTES = 1024 * 1024;
const HASH_READ_BYTES = 1024 * 1024;

/**
 * Captures every file, calling `onCapture` with each one's index in `files` (in no particular
 * order). Small files are read straight into the pack that stores them (no copy): one read task
 * per pack; a file of a small file's size or more is a task and an object of its own.
 */
export async function captureFiles(
  files: readonly WalkedFile[], options: CaptureOptions, onCapture: (index: number, capture: Capture) => void, signal?: AbortSignal,
): Promise<void> {
  const large: number[] = [];
  const batched: Array<{ index: number; size: number }> = [];
  let smallBytes = 0;
  files.forEach((file, index) => {
    if (file.size > options.chunkBytes) return void large.push(index);
    batched.push({ index, size: file.size });
    if (file.size < options.smallFileBytes) smallBytes += file.size;
  });
  const pool = options.pool;
  // With workers, packs small enough that every worker gets a few.
  const packBytes = pool ? Math.min(options.packBytes, Math.max(MIN_PACK_BYTES, Math.ceil(smallBytes / (pool.size * 2)))) : options.packBytes;
  const batches = planBatches(batched, packBytes, Infinity, options.smallFileBytes);
  const task = (batch: Array<{ index: number }>) => ({
    kind: 'read' as const, files: batch.map(({ index }) => toBatchFile(files[index])), attempts: options.attempts, maxBytes: options.chunkBytes,
  });
  const inline = (batch: Array<{ index: number }>) =>
    readBatch(batch.map(({ index }) => toBatchFile(files[index])), options.attempts, { afterRead: options.afterRead, slicer: options.slicer }, options.chunkBytes);
  const start = (batch: Array<{ index: number }>) => {
    if (!pool) return inline(batch);
    return pool.run(task(batch)).catch((error) => {
      if (!(error instanceof PoolFailure)) throw error;
      options.log(`reading on the event loop's thread instead: ${error.message}`);
      return inline(batch);
    });
  };

  // Batches go to the running workers a little ahead of the one being stored; until every worker
  // runs (starting one takes tens of milliseconds), this thread reads a batch too, one at a time.
  pool?.warm();
  if (pool?.failure) options.log(`reading on the event loop's thread instead: ${pool.failure.message}`);
  const inFlight: Array<{ batch: Array<{ index: number }>; read: Promise<BatchRead>; here: boolean }> = [];
  let next = 0;
  try {
    while (next < batches.length || inFlight.length > 0) {
      const online = pool?.online ?? 0;
      const window = online * (1 + AHEAD_PER_WORKER);
      while (next < batches.length && inFlight.filter((flight) => !flight.here).length < window) {
        const batch = batches[next++];
        inFlight.push({ batch, read: start(batch), here: false });
      }
      if (next < batches.length && online < (pool?.size ?? 1) && !inFlight.some((flight) => flight.here)) {
        const batch = batches[next++];
        inFlight.push({ batch, read: inline(batch), here: true });
      }
      signal?.throwIfAborted();
      const { batch, read: reading } = inFlight.shift()!;
      const read = await reading;
      await storeBatch(batch.map(({ index }) => files[index]), read, options, (i, capture) => {
        if (capture.kind === 'large') large.push(batch[i].index);
        else onCapture(batch[i].index, capture);
      });
    }
  } finally {
    // A failure leaves no read behind unsettled.
    await Promise.allSettled(inFlight.map((flight) => flight.read));
  }
  for (const index of large) {
    signal?.throwIfAborted();
    onCapture(index, await captureLarge(files[index], options));
  }
}

const toBatchFile = (file: WalkedFile) => ({ abs: file.abs, size: file.size, mtimeMs: file.mtimeMs, ino: file.ino });

/**
 * Stores what a batch read: its buffer is the pack (or, for one file of a small file's size or
 * more, its object) as it is when every file in it is new and was read at the size the walk saw;
 * bytes of content stored already (or of files gone or grown since) are cut out first, so no
 * content is ever uploaded twice. A file read into a buffer of its own (it grew) goes through
 * the pack writer.
 */
async function storeBatch(
  batch: readonly WalkedFile[], read: BatchRead, options: CaptureOptions, done: (i: number, capture: Capture | { kind: 'large' }) => void,
): Promise<void> {
  const object: StoredObject = { key: '' };
  const body = Buffer.from(read.buffers[0]);
  const kept: Array<{ ref: PartRef; at: number }> = [];
  let keptBytes = 0;
  let planned = 0;
  for (let i = 0; i < batch.length; i++) {
    const outcome = read.outcomes[i];
    const at = planned;
    planned += batch[i].size;
    if (outcome.kind !== 'file') {
      done(i, outcome);
      continue;
    }
    let stored = options.known.get(outcome.hash);
    if (!stored) {
      if (outcome.length === 0) {
        stored = { refs: [] };
      } else if (outcome.buffer === 0 && outcome.offset === at) {
        const ref: PartRef = { object, offset: at, length: outcome.length };
        kept.push({ ref, at });
        keptBytes += outcome.length;
        stored = { refs: [ref] };
      } else {
        const bytes = Buffer.from(read.buffers[outcome.buffer], outcome.offset, outcome.length);
        stored = { refs: [bytes.length < options.smallFileBytes ? await options.packs.add(bytes) : await options.packs.addObject(bytes)] };
      }
      options.known.set(outcome.hash, stored);
    }
    done(i, {
      kind: 'file', hash: outcome.hash, stored, size: outcome.length, mode: outcome.mode, mtimeMs: outcome.mtimeMs,
      ...(outcome.stable && outcome.mtimeMs < options.racyFrom && { ino: outcome.ino }),
      changedWhileRead: !outcome.stable,
    });
  }
  if (kept.length === 0) return;
  let upload = body;
  if (keptBytes !== body.length) {
    // Holes: only the kept files' bytes, in order.
    upload = Buffer.allocUnsafe(keptBytes);
    let offset = 0;
    for (const { ref, at } of kept) {
      body.copy(upload, offset, at, at + ref.length);
      ref.offset = offset;
      offset += ref.length;
    }
  }
  object.key = (await options.packs.addObject(upload)).object.key;
}

/** A file larger than one object: hashed first, and read again to upload only when its content is new. */
async function captureLarge(file: WalkedFile, options: CaptureOptions): Promise<Capture> {
  let before: FileState = file;
  for (let attempt = 1; ; attempt++) {
    const last = attempt >= options.attempts;
    const hashed = await readChecked(file.abs, before, async (fd, size) => {
      const hash = contentHasher();
      const bytes = await readChunks(fd, size, HASH_READ_BYTES, async (chunk) => {
        hash.update(chunk);
        while (options.slicer.due()) await options.slicer.pass();
      });
      return { value: { hash: hash.digest(), bytes }, bytes };
    }, options.afterRead, attempt, options.slicer);
    if (hashed.kind !== 'read') return hashed;
    if (!hashed.stable && !last) {
      before = hashed.after;
      continue;
    }
    const known = options.known.get(hashed.value.hash);
    if (known) return captured(hashed.value.hash, known, hashed.value.bytes, hashed.after, hashed.stable, options);

    const stored = await readChecked(file.abs, hashed.after, async (fd, size) => {
      const hash = contentHasher();
      const refs: PartRef[] = [];
      const bytes = await readChunks(fd, size, options.chunkBytes, async (chunk) => {
        hash.update(chunk);
        while (options.slicer.due()) await options.slicer.pass();
        refs.push(await options.packs.addObject(chunk));
      });
      return { value: { hash: hash.digest(), refs, bytes }, bytes };
    }, undefined, attempt, options.slicer);
    if (stored.kind !== 'read') return stored;
    const stable = hashed.stable && stored.stable && stored.value.hash === hashed.value.hash;
    if (!stable && !last) {
      before = stored.after;
      continue;
    }
    const content: Stored = { refs: stored.value.refs };
    options.known.set(stored.value.hash, content);
    return captured(stored.value.hash, content, stored.value.bytes, stored.after, stable, options);
  }
}

function captured(hash: string, stored: Stored, size: number, after: Stats, stable: boolean, options: CaptureOptions): Capture {
  return {
    kind: 'file', hash, stored, size,
    mode: after.mode & 0o7777,
    mtimeMs: after.mtimeMs,
    ...(stable && after.mtimeMs < options.racyFrom && { ino: after.ino }),
    changedWhileRead: !stable,
  };
}
