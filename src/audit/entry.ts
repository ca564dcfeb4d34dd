// One entry of the audit trail and the hash that chains it to the one before: SHA-256 over the
// canonical JSON (keys sorted, no spaces) of the entry without its `hash`, `prev` included, so an
// entry altered, removed or moved breaks the link to the next one.
import { createHash } from 'node:crypto';

/** Through which door a change came. */
export type AuditDoor = 'api' | 'dashboard' | 'proxy' | 'manifest' | 'cluster' | 'controller';

/** How it ended: done, refused before anything changed (a 4xx), or failed on the way (a 5xx, a failed restore). */
export type AuditOutcome = 'ok' | 'refused' | 'failed';

/** What the recorder says; the log adds seq, time, prev and hash. */
export interface AuditInput {
  /** The signed-in identity, `local` without sign-on, `controller` for its own acts, `file` or a cluster user for the other doors. */
  actor: string;
  door: AuditDoor;
  action: string;
  server_id?: string | null;
  server_name?: string | null;
  outcome: AuditOutcome;
  /** The error code of a refusal or failure. */
  code?: string;
  /** A short line: which spec fields changed, the snapshot put back … never secrets or file contents. */
  detail?: string;
}

export interface AuditEntry {
  seq: number;
  time: string;
  actor: string;
  door: AuditDoor;
  action: string;
  server_id: string | null;
  server_name: string | null;
  outcome: AuditOutcome;
  code?: string;
  detail?: string;
  prev: string;
  hash: string;
}

/** The `prev` of the very first entry. */
export const GENESIS = '0'.repeat(64);

/** Longest detail kept: an entry is a line, not a document. */
export const MAX_DETAIL_CHARS = 500;

/** JSON with every object's keys sorted and no whitespace: the same value always gives the same text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  const keys = Object.keys(value).filter((key) => (value as Record<string, unknown>)[key] !== undefined).sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`).join(',')}}`;
}

/** The hash an entry must carry: over everything but `hash` itself. */
export function entryHash(entry: Omit<AuditEntry, 'hash'> & { hash?: string }): string {
  const { hash: _hash, ...rest } = entry;
  return createHash('sha256').update(canonicalJson(rest)).digest('hex');
}

/** The entry that follows `prev` (the previous entry's hash) as number `seq`. */
export function sealEntry(input: AuditInput, seq: number, prev: string, time: Date): AuditEntry {
  const detail = input.detail && input.detail.length > MAX_DETAIL_CHARS ? `${input.detail.slice(0, MAX_DETAIL_CHARS - 1)}…` : input.detail;
  const entry: Omit<AuditEntry, 'hash'> = {
    seq,
    time: time.toISOString(),
    actor: input.actor,
    door: input.door,
    action: input.action,
    server_id: input.server_id ?? null,
    server_name: input.server_name ?? null,
    outcome: input.outcome,
    ...(input.code ? { code: input.code } : {}),
    ...(detail ? { detail } : {}),
    prev,
  };
  return { ...entry, hash: entryHash(entry) };
}
