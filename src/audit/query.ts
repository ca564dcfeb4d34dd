// Reads the audit trail a page at a time, newest first, from its files: one file (at most the
// rotation size) is read at a time, newest file first, and reading stops once the page is full, so
// memory holds a page and one file, never the whole trail. The cursor is the seq of the last entry
// of the previous page: the next page holds older entries only, whatever was appended meanwhile.
import { readFile } from 'node:fs/promises';
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
    let text: string;
    try {
      text = await readFile(pathOf(dir, file), 'utf8');
    } catch (error) {
      // Rotated away while this page was read: its entries are in the next older file's place no more.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
    const lines = text.split('\n');
    for (let i = lines.length - 1; i >= 0; i--) {
      if (lines[i] === '' || !mayMatch(lines[i], filter)) continue;
      let entry: AuditEntry;
      try {
        entry = JSON.parse(lines[i]) as AuditEntry;
      } catch {
        // A broken line is for GET /audit/verify to report; a listing goes on past it.
        continue;
      }
      if (before !== undefined && entry.seq >= before) continue;
      if (!matches(entry, filter) || !visible(entry)) continue;
      if (entries.length === limit) return { entries, next_cursor: String(entries.at(-1)!.seq) };
      entries.push(entry);
    }
  }
  return { entries, next_cursor: null };
}
