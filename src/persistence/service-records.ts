// A server's records in its snapshots: what a snapshot is made of (manifest text, the controller's
// status, the settings it last wrote, the extensions installed), and putting them back before the
// files: the status record (without anything of the old machine's process), the uid, the settings,
// then the manifest's own text, last, so the controller's first look at it finds the rest in place.
// A manifest that is there is never replaced.
import { promises as fs } from 'node:fs';
import { parseDocument } from 'yaml';
import { writeFileAtomic } from '../core/atomic-write.ts';
import { clearProcess } from '../controller/status-commit.ts';
import { parseManifest, type ManifestStore } from '../manifests/store.ts';
import { specHash } from '../manifests/status-file.ts';
import type { EditorServerStatus } from '../manifests/types.ts';
import type { FilesOptions, ServerFiles } from '../runtime/editor-storage.ts';
import type { DataLayout } from '../workspace/layout.ts';
import type { PersistedStorage, PersistenceDeps } from './service-types.ts';
import { DEFAULT_EXCLUDES, FilesUnavailable, type SnapshotRoot, type SnapshotSources } from './types.ts';

/** What a snapshot keeps of the controller's record besides the manifest (SnapshotSources.status). */
export interface KeptRecord {
  generation?: number;
  status?: EditorServerStatus | null;
  /** editors/<name>/settings-applied.json as it was: what the controller last wrote into settings.json. */
  settingsApplied?: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What of the editor's user folder is kept: what a person would miss, not caches or logs. */
export const USER_FILES = ['settings.json', 'keybindings.json', 'tasks.json', 'snippets'];

/** How the storage is asked for a server's folders: copies (on a cluster) are staged in the data folder. */
export function filesOptions(deps: Pick<PersistenceDeps, 'stagingDir'>, signal: AbortSignal): FilesOptions {
  return { signal, stagingDir: deps.stagingDir, userFiles: USER_FILES };
}

/** The folders a snapshot of the server holds, as the storage gives them on this machine. */
export function rootsOf(files: ServerFiles): SnapshotRoot[] {
  return [
    { id: 'workspace', dir: files.workspace },
    { id: 'user', dir: files.user, only: USER_FILES },
  ];
}

/**
 * Runs `work` on what a snapshot of the server is made of, its files opened from the storage
 * (`opening` called first: a copy out of a volume takes a while) and released after. Undefined,
 * with nothing opened, while the server has no uid or manifest file.
 */
export async function withSources<T>(deps: PersistenceDeps, name: string, signal: AbortSignal, opening: () => void, work: (sources: SnapshotSources) => Promise<T>): Promise<T | undefined> {
  const { store, storage } = deps;
  const server = deps.records.get(name)?.server;
  const uid = server?.metadata.uid;
  if (!server || !uid) return undefined;
  const manifestText = await store.textOf(name);
  if (manifestText === undefined) return undefined;
  opening();
  const files = await storage.openForSnapshot(name, filesOptions(deps, signal)).catch((error: unknown) => {
    throw signal.aborted ? error : new FilesUnavailable(name, 'read', error);
  });
  try {
    const config = deps.config().persistence;
    // Ids only: extensions are installed again after a restore, not stored.
    const installed = await storage.installedExtensions(name).catch(() => new Map<string, string | undefined>());
    return await work({
      name, uid, manifestText,
      status: keptRecord(await readApplied(storage, name), server.metadata.generation, server.status),
      roots: rootsOf(files),
      exclude: [...DEFAULT_EXCLUDES, ...config.exclude, ...(server.spec.persistence?.exclude ?? [])],
      extensions: [...installed.keys()],
      maxBytes: config.maxWorkspaceMb * 1024 * 1024,
      // A change journal watches only the folders the editor itself uses, never a copy.
      watch: files.live && server.status?.phase === 'Running',
    });
  } finally {
    await files.release();
  }
}

/** The settings the controller last wrote (beside the editor's data), or undefined when there are none or they cannot be read. */
export function readApplied(storage: PersistedStorage, name: string): Promise<string | undefined> {
  return storage.readAppliedSettings(name).catch(() => undefined);
}

/** The record as a snapshot keeps it: status, generation and the settings last applied. */
export function keptRecord(settingsApplied: string | undefined, generation: number | undefined, status: EditorServerStatus | undefined): KeptRecord {
  return { ...(generation === undefined ? {} : { generation }), status: status ?? null, ...(settingsApplied === undefined ? {} : { settingsApplied }) };
}

/**
 * The status a restored server starts from: its port, restarts, observed generation and restart,
 * but no pid, start time or workspace path of the old machine (never adopted, never signalled), no
 * idle or capacity stop and no extension outcomes (the spec's are installed again). Pending: its
 * first reconcile finds the restore under way and says so (condition Restored, its events).
 */
export function restoredStatus(kept: EditorServerStatus | null | undefined): EditorServerStatus {
  const status = clearProcess(structuredClone(kept ?? { phase: 'Pending' }));
  delete status.workspacePath;
  delete status.idleStoppedAt;
  delete status.extensions;
  status.conditions = status.conditions?.filter((c) => c.type === 'WorkspaceReady');
  return Object.assign(status, { phase: 'Pending' as const, reason: undefined, message: undefined });
}

/** The manifest's text without a deletion mark (a server brought back after a delete). */
export function withoutDeletionMark(text: string): string {
  const doc = parseDocument(text, { uniqueKeys: false });
  if (!doc.hasIn(['metadata', 'deletionTimestamp'])) return text;
  doc.deleteIn(['metadata', 'deletionTimestamp']);
  return doc.toString({ lineWidth: 0 });
}

export interface PutBack {
  name: string;
  uid: string;
  manifestText: string;
  kept: KeptRecord;
  /** Uids the service's other servers have: a snapshot's uid one of them holds is not given again. */
  uidTaken: (uid: string) => boolean;
}

/**
 * Writes the status record, uid and settings sidecar (unless reaching the storage would start a
 * workload: the files' restore writes it then), then the manifest unless one is there. Returns
 * false when a manifest was there already (it is left as it is; the records still describe the
 * same server name).
 */
export async function putBack(store: ManifestStore, layout: DataLayout, storage: PersistedStorage, item: PutBack, withManifest: boolean): Promise<boolean> {
  const { name, uid, kept } = item;
  const text = withoutDeletionMark(item.manifestText);
  const read = parseManifest(name, text, store.fileOf(name));
  await fs.mkdir(layout.editor(name).root, { recursive: true });
  const keepUid = UUID.test(uid) && !item.uidTaken(uid);
  if (read.kind === 'ok') {
    await store.putStatusRecord(name, {
      generation: kept.generation ?? read.server.metadata.generation ?? 1,
      specHash: specHash(read.server.spec),
      ...(keepUid ? { uid } : {}),
      status: JSON.parse(JSON.stringify(restoredStatus(kept.status))),
    });
  }
  if (keepUid) await writeFileAtomic(layout.uidFile(name), `${uid}\n`, { durable: true });
  if (kept.settingsApplied !== undefined && !storage.storageDeferred?.(name)) await writeAppliedOnce(storage, name, kept.settingsApplied);
  if (!withManifest) return false;
  await fs.mkdir(store.dir, { recursive: true });
  return store.createText(name, text);
}

/** Writes the settings sidecar unless there is one (local data is never replaced). */
export async function writeAppliedOnce(storage: PersistedStorage, name: string, text: string): Promise<void> {
  if ((await storage.readAppliedSettings(name)) === undefined) await storage.writeAppliedSettings(name, text);
}
