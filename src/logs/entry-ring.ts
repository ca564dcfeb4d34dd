// A server's recent log entries in memory, bounded in bytes.

import type { LogEntry } from './entry.ts';

// An entry's message is counted in UTF-8 bytes; this stands for the rest of the object
// (timestamp string, fields, array slot). The ids and names are shared strings.
const ENTRY_OVERHEAD_BYTES = 100;

/** The bytes an entry is counted for; `messageBytes` when the caller knows its message's UTF-8 length. */
export const entryBytes = (entry: LogEntry, messageBytes = Buffer.byteLength(entry.message)): number =>
  messageBytes + ENTRY_OVERHEAD_BYTES;

/** A server's recent entries, oldest first, dropping the oldest once over maxBytes. */
export class EntryRing {
  readonly #maxBytes: number;
  #entries: LogEntry[] = [];
  /** entryBytes of each entry, at the same index: counted once on push, subtracted on eviction. */
  #sizes: number[] = [];
  #start = 0;
  #bytes = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** `size`: entryBytes(entry), when the caller has it already. */
  push(entry: LogEntry, size = entryBytes(entry)): void {
    this.#entries.push(entry);
    this.#sizes.push(size);
    this.#bytes += size;
    while (this.#bytes > this.#maxBytes && this.#entries.length - this.#start > 1) {
      this.#bytes -= this.#sizes[this.#start];
      this.#start++;
    }
    // Drop the consumed head now and then instead of shifting on every push.
    if (this.#start > 1024 && this.#start * 2 > this.#entries.length) {
      this.#entries = this.#entries.slice(this.#start);
      this.#sizes = this.#sizes.slice(this.#start);
      this.#start = 0;
    }
  }

  last(count: number): LogEntry[] {
    if (count <= 0) return [];
    return this.#entries.slice(Math.max(this.#start, this.#entries.length - count));
  }
}
