// The persistence service's shapes: the engine and the rest of the service as it uses them, what a
// server's record and the shutdown's log line say, and errors in words.
import type { ExtensionGroup, PersistenceConfig } from '../config/settings.ts';
import type { ServerRecord } from '../index/records.ts';
import { apiError } from '../core/error-catalogue.ts';
import type { LogLevel } from '../logs/entry.ts';
import type { ManifestStore } from '../manifests/store.ts';
import type { PersistenceMetrics } from '../metrics/service-metrics.ts';
import type { EditorStorage } from '../runtime/editor-storage.ts';
import type { DataLayout } from '../workspace/layout.ts';
import type { DeclaredKey } from './catalog.ts';
import type { KeptServer } from './engine.ts';
import { timeOfId } from './keys.ts';
import { SnapshotNotFoundError, StoreError, WorkspaceTooLargeError, type RestoreResult, type SnapshotInfo, type SnapshotRoot, type SnapshotSources } from './types.ts';

/** The engine as the service uses it (src/persistence/engine.ts; tests may give a fake). */
export interface SnapshotEngineApi {
  snapshot(sources: SnapshotSources, reason: string, signal?: AbortSignal): Promise<{ snapshot: SnapshotInfo; unchanged: boolean }>;
  list(name: string): Promise<SnapshotInfo[]>;
  /** overwriteNewer: a snapshot chosen on purpose replaces local files newer than it. */
  restore(name: string, options: { snapshotId?: string; roots: SnapshotRoot[]; signal?: AbortSignal; overwriteNewer?: boolean }): Promise<RestoreResult>;
  servers(): Promise<KeptServer[]>;
  putDeclared(name: string, digest: string, body: Buffer, replaces: readonly DeclaredKey[], signal?: AbortSignal): Promise<DeclaredKey>;
  getDeclared(key: string, signal?: AbortSignal): Promise<Buffer | undefined>;
  declaredOf(name: string, signal?: AbortSignal): Promise<DeclaredKey[]>;
  markDeleted(name: string, at: Date): Promise<void>;
  unmarkDeleted(name: string): Promise<void>;
  purgeDeleted(retainDays: number): Promise<string[]>;
  collectGarbage(): Promise<unknown>;
  stopWatching?(name: string): void;
  journalState?(name: string): Array<{ root: string; watching: number; patched: number; full: number }>;
  close?(): void;
}

export interface PersistenceDeps {
  engine: SnapshotEngineApi;
  /** The target in words (the store's description): "folder /mnt/keep", "volume /Volumes/main/team/devbox/prod". */
  target: string;
  store: ManifestStore;
  /** The data folder's records of each server (its uid); never its files, which only `storage` reaches. */
  layout: DataLayout;
  /** The runtime's storage half: each server's files (folders on this machine, or a volume in a cluster) and extensions. */
  storage: PersistedStorage;
  /** Where a storage that copies a server's files to this machine stages them (`<data>/persistence-staging`). */
  stagingDir: string;
  /** The controller's records: each server's manifest and status. */
  records: ReadonlyMap<string, ServerRecord>;
  /** Servers whose editor runs now. */
  running: () => Iterable<string>;
  enqueue: (name: string) => void;
  /** Calls `listener(name)` on every change the controller reports of a server; returns its removal. */
  onChanged?: (listener: (name: string) => void) => () => void;
  /** The config in use: it follows the file. */
  config: () => { persistence: PersistenceConfig; extensionGroups: Record<string, ExtensionGroup> };
  logs: { event(name: string, level: LogLevel, message: string): void };
  metrics?: PersistenceMetrics;
  /** First and longest wait between retries while the target fails. */
  retry: { initialMs: number; maxMs: number };
  now?: () => number;
  log: (message: string) => void;
}

/** What persistence asks of the runtime's storage. */
export type PersistedStorage = Pick<EditorStorage,
  'openForSnapshot' | 'openForRestore' | 'installedExtensions' | 'installExtension' | 'readAppliedSettings' | 'writeAppliedSettings' | 'storageDeferred'>;

/** What the final snapshots at shutdown did, for the one line the log gets. */
export interface ShutdownSummary {
  servers: number;
  saved: number;
  unchanged: number;
  failed: string[];
  uploadedBytes: number;
  seconds: number;
  /** Servers whose declared state (manifest, status) was written. */
  declared: number;
}


/** A server's record field `persistence` (null there when nothing is kept). */
export interface ServerPersistence {
  last_snapshot_at: string | null;
  last_snapshot_id: string | null;
  size_bytes: number | null;
  files: number | null;
  last_error: string | null;
  in_progress: 'snapshot' | 'restore' | null;
}

/** A server nothing is known of yet: one object, so an unchanged record stays the same object. */
export const NO_SNAPSHOT: ServerPersistence = Object.freeze({
  last_snapshot_at: null, last_snapshot_id: null, size_bytes: null, files: null, last_error: null, in_progress: null,
});

/** The record fields a committed snapshot sets. */
export function fromSnapshot(snapshot: SnapshotInfo): Partial<ServerPersistence> {
  return { last_snapshot_at: snapshot.createdAt, last_snapshot_id: snapshot.id, size_bytes: snapshot.bytes, files: snapshot.files };
}

/** An error in words, with what to do when the store said it. */
export function describeError(error: unknown): string {
  if (error instanceof StoreError) return `${error.message}: ${error.hint}`;
  return (error as Error)?.message ?? String(error);
}

/**
 * Persistence's errors as the API answers them: a snapshot not kept 404, a workspace over the
 * limit 413. A StoreError passes as it is (its failure and hint), for the routes to answer 503.
 */
export async function answer<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof SnapshotNotFoundError) throw apiError('SNAPSHOT_NOT_FOUND', `${error.message}: list the server's snapshots with GET /servers/{id}/snapshots`);
    if (error instanceof WorkspaceTooLargeError) throw apiError('WORKSPACE_TOO_LARGE', error.message);
    throw error;
  }
}

/** Marked deleted and not created again under its name since (a snapshot or a declared record newer than the mark is a new server's). */
export function isDeleted(server: KeptServer): server is KeptServer & { deletedAt: string } {
  if (server.deletedAt === undefined) return false;
  const mark = Date.parse(server.deletedAt);
  const declaredAt = timeOfId(server.declared.at(-1)?.id ?? '');
  return !(Date.parse(server.latest?.createdAt ?? '') > mark) && !(declaredAt !== undefined && declaredAt > mark);
}
