// What a server declares, kept apart from its files: the manifest's text as written, its uid and
// the controller's record (status, generation, settings last applied). One small object per
// change, so a server that never ran and an edit to a stopped one are kept without a walk of the
// workspace; its digest is in its key, so a listing tells what the store holds without reading it.
import { createHash } from 'node:crypto';
import { restoredStatus, type KeptRecord } from './service-records.ts';
import type { EditorServerStatus } from '../manifests/types.ts';

export const DECLARED_FORMAT = 'devbox-declared/1';

/** One server's declared state, as kept at the store. */
export interface DeclaredRecord {
  name: string;
  /** Null when the controller had not given the server its uid yet (a file written just before a shutdown). */
  uid: string | null;
  /** When it was read, as an ISO time. */
  at: string;
  manifestText: string;
  kept: KeptRecord;
}

/** Manifest texts above this are not kept as declared records (the store's manifests are far smaller). */
const MAX_TEXT = 4 * 1024 * 1024;

/** What the record says, in a canonical form: equal digests, equal declared state (its time aside). */
export function declaredDigest(record: Omit<DeclaredRecord, 'at'>): string {
  const { generation, status, settingsApplied } = record.kept;
  // Only what comes back matters: the status as a restore puts it (no process, phase or health).
  const restored = restoredStatus((status ?? null) as EditorServerStatus | null);
  const canonical = canonicalJson([record.name, record.uid, record.manifestText, generation ?? null, restored, settingsApplied ?? null]);
  return createHash('sha256').update(canonical).digest('hex').slice(0, 32);
}

export function encodeDeclared(record: DeclaredRecord): Buffer {
  return Buffer.from(JSON.stringify({ format: DECLARED_FORMAT, ...record }));
}

/** Reads a record from the store's bytes; undefined (and why) when it is not one this version can use. */
export function parseDeclared(bytes: Buffer, name: string): { record: DeclaredRecord } | { problem: string } {
  let value: any;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    return { problem: `not JSON (${(error as Error).message})` };
  }
  if (value?.format !== DECLARED_FORMAT) return { problem: `format ${JSON.stringify(value?.format)} is not ${DECLARED_FORMAT}` };
  if (value.name !== name) return { problem: `it names server ${JSON.stringify(value.name)}` };
  if (value.uid !== null && typeof value.uid !== 'string') return { problem: 'its uid is not a string' };
  if (typeof value.at !== 'string' || !Number.isFinite(Date.parse(value.at))) return { problem: 'its time is not an ISO time' };
  if (typeof value.manifestText !== 'string' || value.manifestText.length > MAX_TEXT) return { problem: 'its manifest is not text of at most 4 MiB' };
  const kept = value.kept;
  if (kept === null || typeof kept !== 'object' || Array.isArray(kept)) return { problem: 'its record is not an object' };
  if (kept.settingsApplied !== undefined && typeof kept.settingsApplied !== 'string') return { problem: 'its settings are not text' };
  if (kept.generation !== undefined && !Number.isSafeInteger(kept.generation)) return { problem: 'its generation is not an integer' };
  if (kept.status !== undefined && kept.status !== null && (typeof kept.status !== 'object' || Array.isArray(kept.status))) return { problem: 'its status is not an object' };
  return { record: { name, uid: value.uid, at: value.at, manifestText: value.manifestText, kept } };
}

/** JSON with object keys sorted at every depth, so the same data always reads the same. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v) => (v && typeof v === 'object' && !Array.isArray(v)
    ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]]))
    : v));
}
