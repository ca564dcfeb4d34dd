// Checks and writes the files a restore takes from one stored object, the same way on the event
// loop's thread and in a worker (work-pool.ts): each file's bytes are checked against its hash
// first (a mismatch, or bytes past the object's end, is reported as corrupted and nothing is
// written), then written under a temporary name and renamed into place (write-file.ts).
import { contentHashSliced, type HashAlgorithm } from './hash.ts';
import type { Slicer } from './slices.ts';
import { writeBytesAtomic, type WrittenStat } from './write-file.ts';

export interface WriteEntry {
  /** Where the file goes (raw bytes). */
  abs: Uint8Array;
  offset: number;
  length: number;
  hash: string;
  mode: number;
  mtimeMs: number;
}

export type WriteOutcome = ({ kind: 'written' } & WrittenStat) | { kind: 'corrupted' };

export async function writeBatch(bytes: Uint8Array, entries: readonly WriteEntry[], algorithm: HashAlgorithm, slicer?: Slicer): Promise<WriteOutcome[]> {
  const outcomes: WriteOutcome[] = [];
  for (const entry of entries) {
    while (slicer?.due()) await slicer.pass();
    const end = entry.offset + entry.length;
    const slice = end <= bytes.length ? bytes.subarray(entry.offset, end) : undefined;
    if (!slice || (await contentHashSliced(slice, algorithm, slicer)) !== entry.hash) {
      outcomes.push({ kind: 'corrupted' });
      continue;
    }
    const abs = Buffer.isBuffer(entry.abs) ? entry.abs : Buffer.from(entry.abs.buffer, entry.abs.byteOffset, entry.abs.byteLength);
    outcomes.push({ kind: 'written', ...writeBytesAtomic(abs, entry.mode, entry.mtimeMs, slice) });
  }
  return outcomes;
}
