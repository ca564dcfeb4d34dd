// Reads the audit trail a page at a time, newest first, from its files: each is read from its end
// in small chunks, newest file first, and reading stops once the page is full, so memory holds a
// page and a chunk, never a whole file. The cursor is the seq of the last entry
// of the previous page: the next page holds older entries only, whatever was appended meanwhile.
import { open } from 'node:fs/promises';
import type { AuditEntry } from './entry.ts';
import { chainFiles, firstSeqOf, pathOf } from './files.ts';

export interface AuditFilter {
  /** A server's id or its manifest name. */
  server?: string;
  /** With `server` (an id): also the entries of this manifest name that carry no id (a manifest written by hand before the controller gave it one). */
  unnamedAs?: string;
  actor?: string;
  /** Any of these actions. */
  actions?: string[];
  door?: string;
  /** ISO times, inclusive. */
  since?: string;
  until?: string;
}

export interface AuditPage {
  entries: AuditEntry[];
  /** Give as `cursor` for the next (older) page; null at the oldest entry. */
  next_cursor: string | null;
}

/** Whether an entry passes the filter. */
export function matches(entry: AuditEntry, filter: AuditFilter): boolean {
  if (filter.server !== undefined && entry.server_id !== filter.server && entry.server_name !== filter.server
    && !(entry.server_id === null && filter.unnamedAs !== undefined && entry.server_name === filter.unnamedAs)) return false;
  if (filter.actor !== undefined && entry.actor !== filter.actor.trim().toLowerCase() && entry.actor !== filter.actor) return false;
  if (filter.actions && !filter.actions.includes(entry.action)) return false;
  if (filter.door !== undefined && entry.door !== filter.door) return false;
  const time = Date.parse(entry.time);
  if (filter.since !== undefined && time < Date.parse(filter.since)) return false;
  if (filter.until !== undefined && time > Date.parse(filter.until)) return false;
  return true;
}

/** A look at the line's text before it is parsed: a server or person it does not even name cannot match. */
function mayMatch(line: string, filter: AuditFilter): boolean {
  if (filter.server !== undefined && !line.includes(JSON.stringify(filter.server)) && (filter.unnamedAs === undefined || !line.includes(JSON.stringify(filter.unnamedAs)))) return false;
  if (filter.actor !== undefined && !line.toLowerCase().includes(JSON.stringify(filter.actor.trim().toLowerCase()))) return false;
  return true;
}

/**
 * Up to `limit` entries older than `before` (a seq; all when undefined) that pass the filter and
 * `visible`, newest first.
 */
export async function readPage(
  dir: string, filter: AuditFilter, limit: number, before: number | undefined, visible: (entry: AuditEntry) => boolean = () => true,
): Promise<AuditPage> {
  const entries: AuditEntry[] = [];
  const files = chainFiles(dir).reverse();
  for (const file of files) {
    // A rotated file that starts at or after the cursor holds nothing older than it.
    const first = firstSeqOf(file);
    if (before !== undefined && first !== undefined && first >= before) continue;
    try {
      for await (const line of linesBackwards(pathOf(dir, file))) {
        if (line === '' || !mayMatch(line, filter)) continue;
        let entry: AuditEntry;
        try {
          entry = JSON.parse(line) as AuditEntry;
        } catch {
          // A broken line is for GET /audit/verify to report; a listing goes on past it.
          continue;
        }
        if (before !== undefined && entry.seq >= before) continue;
        if (!matches(entry, filter) || !visible(entry)) continue;
        if (entries.length === limit) return { entries, next_cursor: String(entries.at(-1)!.seq) };
        entries.push(entry);
      }
    } catch (error) {
      // A file pruned after the listing: its entries are gone from the data folder (the target keeps them).
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  return { entries, next_cursor: null };
}

/** How much of a file is read at a time, from its end. */
const CHUNK_BYTES = 64 * 1024;

/** A file's lines, last first, read in chunks from its end: memory holds a chunk and a line, whatever the file's size. */
export async function* linesBackwards(path: string): AsyncGenerator<string> {
  const handle = await open(path, 'r');
  try {
    let position = (await handle.stat()).size;
    // Bytes of a line whose start is in a chunk not read yet.
    let rest = Buffer.alloc(0);
    while (position > 0) {
      const size = Math.min(CHUNK_BYTES, position);
      position -= size;
      const chunk = Buffer.alloc(size);
      await handle.read(chunk, 0, size, position);
      const bytes = Buffer.concat([chunk, rest]);
      let end = bytes.length;
      for (let at = bytes.lastIndexOf(0x0a, end - 1); at >= 0; at = bytes.lastIndexOf(0x0a, end - 1)) {
        if (at + 1 < end) yield bytes.subarray(at + 1, end).toString('utf8');
        end = at;
        if (end === 0) break;
      }
      rest = bytes.subarray(0, end);
    }
    if (rest.length > 0) yield rest.toString('utf8');
  } finally {
    await handle.close();
  }
}
