// Where the audit trail lives in its folder: the file being written (audit.jsonl) and the rotated
// ones, each named by the seq of its first entry (audit-000000000001.jsonl), so the names sort in
// the order of the chain. Shared by the log, the verifier and the reader.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

export const CURRENT_FILE = 'audit.jsonl';
const ROTATED = /^audit-(\d{12})\.jsonl$/;

/** The rotated file whose first entry is `seq`. */
export function rotatedName(seq: number): string {
  return `audit-${String(seq).padStart(12, '0')}.jsonl`;
}

/** The seq of a rotated file's first entry, from its name; undefined for any other name. */
export function firstSeqOf(file: string): number | undefined {
  const match = ROTATED.exec(file);
  return match ? Number(match[1]) : undefined;
}

/** The rotated files, oldest first (names only). */
export function rotatedFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return names.filter((name) => ROTATED.test(name)).sort();
}

/** Every file of the trail, oldest first, the one being written last (names only; the current one even if empty). */
export function chainFiles(dir: string): string[] {
  const rotated = rotatedFiles(dir);
  let current: string[] = [];
  try {
    if (readdirSync(dir).includes(CURRENT_FILE)) current = [CURRENT_FILE];
  } catch {
    // No folder: no files.
  }
  return [...rotated, ...current];
}

export const pathOf = (dir: string, file: string): string => join(dir, file);
