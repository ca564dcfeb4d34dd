// Walks the audit trail's files in order, line by line (a stream: memory stays one line), and
// reports the first entry that breaks the chain: a line that is no entry, an entry whose hash does
// not match its content (altered), one whose prev is not the hash of the entry before (one removed,
// reordered or inserted), or a seq that does not follow. What it cannot see on its own: entries
// cut from the end, which only a copy kept elsewhere (`expect`) shows.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { entryHash, GENESIS, type AuditEntry } from './entry.ts';
import { chainFiles, pathOf } from './files.ts';

export interface ChainBreak {
  file: string;
  /** 1-based line in the file. */
  line: number;
  /** The seq the entry says it has, when it says one. */
  seq: number | null;
  problem: string;
}

export interface Verification {
  ok: boolean;
  files: number;
  entries: number;
  first_seq: number | null;
  last_seq: number | null;
  last_hash: string | null;
  /** Set when the oldest file kept does not start the chain (older files were rotated away): its first entry's prev is taken on trust. */
  anchored_at?: { file: string; seq: number; prev: string };
  broken?: ChainBreak;
}

export interface VerifyOptions {
  /** A seq and hash known from elsewhere (the persistence target's copy, GET /health read earlier): the trail must hold that very entry. */
  expect?: { seq: number; hash: string };
}

/** Verifies the trail in `dir`. */
export async function verifyAuditDir(dir: string, options: VerifyOptions = {}): Promise<Verification> {
  const files = chainFiles(dir);
  const result: Verification = { ok: true, files: files.length, entries: 0, first_seq: null, last_seq: null, last_hash: null };
  let prev: { seq: number; hash: string } | undefined;
  let expectSeen = false;
  const fail = (file: string, line: number, seq: number | null, problem: string): Verification => ({ ...result, ok: false, broken: { file, line, seq, problem } });

  for (const file of files) {
    let lineNo = 0;
    const lines = createInterface({ input: createReadStream(pathOf(dir, file)), crlfDelay: Infinity });
    for await (const line of lines) {
      lineNo++;
      let entry: AuditEntry;
      try {
        entry = JSON.parse(line) as AuditEntry;
      } catch {
        lines.close();
        return fail(file, lineNo, null, 'the line is not JSON: it was altered, or cut short by a crash');
      }
      const seq = typeof entry.seq === 'number' ? entry.seq : null;
      if (seq === null || typeof entry.hash !== 'string' || typeof entry.prev !== 'string') {
        lines.close();
        return fail(file, lineNo, seq, 'the line is not an audit entry (no seq, prev or hash)');
      }
      if (entryHash(entry) !== entry.hash) {
        lines.close();
        return fail(file, lineNo, seq, 'its content does not match its hash: the entry was altered');
      }
      if (prev === undefined) {
        if (entry.prev !== GENESIS) result.anchored_at = { file, seq, prev: entry.prev };
        else if (seq !== 1) return fail(file, lineNo, seq, `the first entry of the chain has seq ${seq}, not 1`);
      } else if (entry.prev !== prev.hash) {
        lines.close();
        return fail(file, lineNo, seq, `its prev is not the hash of the entry before (seq ${prev.seq}): an entry was removed, reordered or inserted here`);
      } else if (seq !== prev.seq + 1) {
        lines.close();
        return fail(file, lineNo, seq, `seq ${seq} does not follow seq ${prev.seq}`);
      }
      if (options.expect && seq === options.expect.seq) {
        if (entry.hash !== options.expect.hash) {
          lines.close();
          return fail(file, lineNo, seq, `its hash is not the one known from elsewhere (${options.expect.hash}): the trail was rewritten from here or earlier`);
        }
        expectSeen = true;
      }
      result.entries++;
      result.first_seq ??= seq;
      result.last_seq = seq;
      result.last_hash = entry.hash;
      prev = { seq, hash: entry.hash };
    }
  }
  if (options.expect && !expectSeen) {
    const last = files.at(-1) ?? '(no file)';
    return fail(last, 0, options.expect.seq, (result.last_seq ?? 0) < options.expect.seq
      ? `entry ${options.expect.seq} is known from elsewhere but the trail ends at ${result.last_seq ?? 'nothing'}: its newest entries were cut off`
      : `entry ${options.expect.seq} is known from elsewhere but is not in the trail (rotated away?)`);
  }
  return result;
}
