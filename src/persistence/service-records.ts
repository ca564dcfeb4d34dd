// A server's records in its snapshots: what a snapshot is made of (manifest text, the controller's
// status, the settings it last wrote, the extensions installed), and putting them back before the
// files: the status record (without anything of the old machine's process), the uid, the settings,
// then the manifest's own text, last, so the controller's first look at it finds the rest in place.
// A manifest that is there is never replaced.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { writeFileAtomic } from '../core/atomic-write.ts';
import { clearProcess } from '../controller/status-commit.ts';
import { parseManifest, type ManifestStore } from '../manifests/store.ts';
import { specHash } from '../manifests/status-file.ts';
import type { EditorServerStatus } from '../manifests/types.ts';
import type { DataLayout } from '../workspace/layout.ts';
import type { PersistenceDeps } from './service-types.ts';
import { DEFAULT_EXCLUDES, type SnapshotRoot, type SnapshotSources } from './types.ts';

/** What a snapshot keeps of the controller's record besides the manifest (SnapshotSources.status). */
export interface KeptRecord {
  generation?: number;
  status?: EditorServerStatus | null;
  /** editors/<name>/settings-applied.json as it was: what the controller last wrote into settings.json. */
  settingsApplied?: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The settings the controller last wrote, beside the editor's data (see src/controller/ensure-settings.ts). */
export function settingsAppliedFile(layout: DataLayout, name: string): string {
  return join(layout.editor(name).root, 'settings-applied.json');
}

/** What a snapshot of the server is made of; undefined while it has no uid or manifest file. */
export async function snapshotSources(deps: PersistenceDeps, name: string, roots: SnapshotRoot[]): Promise<SnapshotSources | undefined> {
  const { layout, store, installer } = deps;
  const server = deps.records.get(name)?.server;
  const uid = server?.metadata.uid;
  if (!server || !uid) return undefined;
  const manifestText = await store.textOf(name);
  if (manifestText === undefined) return undefined;
  const config = deps.config().persistence;
  // Ids only: extensions are installed again after a restore, not stored.
  const installed = await installer.installed({ name, ...layout.editor(name) }).catch(() => new Map<string, string | undefined>());
  return {
    name, uid, manifestText,
    status: await keptRecord(layout, name, server.metadata.generation, server.status),
    roots,
    exclude: [...DEFAULT_EXCLUDES, ...config.exclude, ...(server.spec.persistence?.exclude ?? [])],
    extensions: [...installed.keys()],
    maxBytes: config.maxWorkspaceMb * 1024 * 1024,
    watch: server.status?.phase === 'Running',
  };
}

/** The record as a snapshot keeps it: status, generation and the settings last applied. */
export async function keptRecord(layout: DataLayout, name: string, generation: number | undefined, status: EditorServerStatus | undefined): Promise<KeptRecord> {
  const settingsApplied = await fs.readFile(settingsAppliedFile(layout, name), 'utf8').catch(() => undefined);
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
 * Writes the status record, uid and settings sidecar, then the manifest unless one is there.
 * Returns false when a manifest was there already (it is left as it is; the records still
 * describe the same server name).
 */
export async function putBack(store: ManifestStore, layout: DataLayout, item: PutBack, withManifest: boolean): Promise<boolean> {
  const { name, uid, kept } = item;
  const text = withoutDeletionMark(item.manifestText);
  const read = parseManifest(name, text, store.fileOf(name));
  const editor = layout.editor(name);
  await fs.mkdir(editor.root, { recursive: true });
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
  if (kept.settingsApplied !== undefined) {
    const sidecar = settingsAppliedFile(layout, name);
    await fs.writeFile(sidecar, kept.settingsApplied, { flag: 'wx' }).catch((error) => {
      if (error.code !== 'EEXIST') throw error;
    });
  }
  if (!withManifest) return false;
  await fs.mkdir(store.dir, { recursive: true });
  return store.createText(name, text);
}
