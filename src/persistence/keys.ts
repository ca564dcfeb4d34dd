// Where the engine keeps things in a store, and its time-sortable ids: indexes under
// `servers/<name>/snapshots/<id>.json`, deletion marks at `servers/<name>/deleted.json`, what a
// server declares (manifest and kept status) at `servers/<name>/declared/<id>-<digest>.json`
// (the newest id is current; the digest lets a listing say what it holds), and the
// bytes of files in `objects/<time>-<random>-<size>` (the time lets garbage collection tell an
// object's age on any store; the size lets it say how much it freed).
import { randomBytes } from 'node:crypto';

export const SERVERS_PREFIX = 'servers/';
export const OBJECTS_PREFIX = 'objects/';

const SEGMENT = /^(?!\.{1,2}$)[A-Za-z0-9._-]+$/;
const TIME = /^(\d{4}-\d\d-\d\dT\d\d)-(\d\d)-(\d\d\.\d{3}Z)-[0-9a-f]+$/;
const OBJECT = /^objects\/(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}Z-[0-9a-f]+)-(\d+)$/;
const INDEX = /^servers\/([^/]+)\/snapshots\/([^/]+)\.json$/;
const MARK = /^servers\/([^/]+)\/deleted\.json$/;
const DECLARED = /^servers\/([^/]+)\/declared\/([^/]+)-([0-9a-f]{32})\.json$/;

/** A server name becomes a key segment: refuse one that cannot (names are DNS-1123 labels, so this is a bug guard). */
export function assertServerName(name: string): void {
  if (!SEGMENT.test(name)) throw new Error(`"${name}" cannot name a server in a snapshot store: use letters, digits, '.', '_' or '-'`);
}

export const serverPrefix = (name: string) => `${SERVERS_PREFIX}${name}/`;
export const snapshotsPrefix = (name: string) => `${SERVERS_PREFIX}${name}/snapshots/`;
export const indexKey = (name: string, id: string) => `${snapshotsPrefix(name)}${id}.json`;
export const deletedMarkKey = (name: string) => `${SERVERS_PREFIX}${name}/deleted.json`;
export const declaredKey = (name: string, id: string, digest: string) => `${SERVERS_PREFIX}${name}/declared/${id}-${digest}.json`;

/** `2026-11-26T10-00-00.000Z-1a2b3c4d`: sortable as text in time order (ISO time, `:` made `-`), unique by its random tail. */
export function timeId(ms: number): string {
  return `${new Date(ms).toISOString().replace(/:/g, '-')}-${randomBytes(4).toString('hex')}`;
}

/** The time an id (snapshot or object) was made, or undefined when it is not one of ours. */
export function timeOfId(id: string): number | undefined {
  const match = TIME.exec(id);
  if (!match) return undefined;
  const ms = Date.parse(`${match[1]}:${match[2]}:${match[3]}`);
  return Number.isFinite(ms) ? ms : undefined;
}

/** A snapshot id after `latest` even when the clock went back, so the newest is always last in order. */
export function nextSnapshotId(nowMs: number, latest: string | undefined): string {
  const latestMs = latest === undefined ? undefined : timeOfId(latest);
  return timeId(latestMs !== undefined && latestMs >= nowMs ? latestMs + 1 : nowMs);
}

export function newObjectKey(nowMs: number, size: number): string {
  return `${OBJECTS_PREFIX}${timeId(nowMs)}-${size}`;
}

/** An object key's time and size, or undefined for a key the engine did not make (never collected). */
export function parseObjectKey(key: string): { createdAt: number; size: number } | undefined {
  const match = OBJECT.exec(key);
  if (!match) return undefined;
  const createdAt = timeOfId(match[1]);
  return createdAt === undefined ? undefined : { createdAt, size: Number(match[2]) };
}

export type ServerKey =
  | { name: string; kind: 'index'; id: string }
  | { name: string; kind: 'deleted' }
  | { name: string; kind: 'declared'; id: string; digest: string };

/** What a key under `servers/` is: a snapshot's index, a deletion mark, a declared record, or (undefined) something else. */
export function parseServerKey(key: string): ServerKey | undefined {
  const index = INDEX.exec(key);
  if (index && timeOfId(index[2]) !== undefined) return { name: index[1], kind: 'index', id: index[2] };
  const mark = MARK.exec(key);
  if (mark) return { name: mark[1], kind: 'deleted' };
  const declared = DECLARED.exec(key);
  if (declared && timeOfId(declared[2]) !== undefined) return { name: declared[1], kind: 'declared', id: declared[2], digest: declared[3] };
  return undefined;
}

/** Every segment of a store key is [A-Za-z0-9._-]+, never `.` or `..`; no leading or doubled `/`. */
export function isValidKey(key: string): boolean {
  return key.length > 0 && key.split('/').every((segment) => SEGMENT.test(segment));
}
