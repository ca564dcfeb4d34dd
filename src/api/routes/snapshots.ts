// Snapshots of a server's work kept at the persistence target (DEVBOX_PERSIST_TO): list them,
// take one now, restore a chosen one into a stopped server, and undo a delete within
// persistence.retainDeletedDays. Without a target every route answers 409 PERSISTENCE_DISABLED.
import type { Router } from 'express';
import { apiError } from '../../core/error-catalogue.ts';
import type { RestoreResult, SnapshotInfo } from '../../persistence/types.ts';
import { FilesUnavailable, StoreError } from '../../persistence/types.ts';
import { parseManifest } from '../../manifests/parse.ts';
import { displayNameOf } from '../../manifests/types.ts';
import { ownerOf } from '../access.ts';
import { quotaExceeded } from '../quota-errors.ts';
import { createdView } from '../views.ts';
import { findServer, phaseIs, type ServersDeps } from './context.ts';

/** What the routes need of the service's persistence (src/persistence/service-persistence.ts). */
export interface PersistenceApi {
  snapshot(name: string, reason: string): Promise<SnapshotInfo>;
  list(name: string): Promise<SnapshotInfo[]>;
  restoreInto(name: string, snapshotId?: string): Promise<RestoreResult>;
  /** Given `admits`, only those whose kept manifest it admits. */
  deleted(admits?: (name: string, manifestText: string | undefined) => boolean): Promise<Array<{ name: string; uid: string; deletedAt: string; latest: SnapshotInfo }>>;
  /** `admit` sees the manifest that would come back, and throws to refuse it. */
  undelete(name: string, admit?: (manifestText: string) => void): Promise<void>;
}

const SNAPSHOT_ID = /^[A-Za-z0-9._-]{1,128}$/;
const MANIFEST_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function snapshotRoutes(deps: ServersDeps, router: Router): void {
  const persistence = (): PersistenceApi => {
    if (!deps.persistence) {
      throw apiError('PERSISTENCE_DISABLED');
    }
    return deps.persistence;
  };

  router.get('/servers/:id/snapshots', async (req, res) => {
    const record = findServer(deps, req);
    const snapshots = await storeCall(() => persistence().list(record.name));
    res.json({ status: 'success', data: { snapshots: snapshots.map(snapshotView) } });
  });

  router.post('/servers/:id/snapshot', async (req, res) => {
    const record = findServer(deps, req);
    const snapshot = await storeCall(() => persistence().snapshot(record.name, 'api'));
    res.json({ status: 'success', message: `snapshot ${snapshot.id} of server "${displayNameOf(record.server!)}" kept`, data: snapshotView(snapshot) });
  });

  router.post('/servers/:id/restore', async (req, res) => {
    const record = findServer(deps, req);
    const body = (req.body ?? {}) as { snapshot_id?: unknown };
    const wanted = body.snapshot_id;
    if (wanted !== undefined && (typeof wanted !== 'string' || !SNAPSHOT_ID.test(wanted))) {
      throw apiError('INVALID_BODY', 'snapshot_id must be the id of one of the server\'s snapshots (GET /servers/{id}/snapshots), or left out for the latest');
    }
    if (record.server!.spec.running || !phaseIs('Stopped', 'Failed')(record)) {
      throw apiError('SERVER_RUNNING');
    }
    // Checked before anything is held for the restore: an unknown snapshot changes nothing.
    const api = persistence();
    const known = await storeCall(() => api.list(record.name));
    if (wanted !== undefined && !known.some((s) => s.id === wanted)) {
      throw apiError('SNAPSHOT_NOT_FOUND', `server "${record.name}" has no snapshot "${wanted}": list them with GET /servers/{id}/snapshots`);
    }
    if (known.length === 0) throw apiError('SNAPSHOT_NOT_FOUND', `server "${record.name}" has no snapshot yet: take one with POST /servers/{id}/snapshot`);
    const result = await storeCall(() => api.restoreInto(record.name, wanted));
    res.json({
      status: 'success',
      message: `restored ${result.files} files of snapshot ${result.snapshot.id}` +
        (result.corrupted.length > 0 ? `; ${result.corrupted.length} damaged in the store were not restored` : ''),
      data: {
        snapshot: snapshotView(result.snapshot), files: result.files, bytes: result.bytes,
        kept_newer: result.keptNewer, corrupted: result.corrupted,
      },
    });
  });

  router.get('/snapshots/deleted', async (req, res) => {
    // Where the requester may not see every server, only those they could bring back are listed
    // (each one's kept manifest read to know its owner): the names of others' are not theirs to learn.
    const who = deps.access.filterFor(req) && deps.access.requester(req.headers);
    const admits = who ? (name: string, text: string | undefined) => {
      const kept = text === undefined ? undefined : parseManifest(name, text);
      return deps.access.manages(who, kept?.kind === 'ok' ? kept.server : undefined);
    } : undefined;
    const deleted = await storeCall(() => persistence().deleted(admits));
    res.json({
      status: 'success',
      data: { servers: deleted.map((d) => ({ name: d.name, id: d.uid, deleted_at: d.deletedAt, latest: snapshotView(d.latest) })) },
    });
  });

  router.post('/snapshots/deleted/:name/restore', async (req, res) => {
    const name = String(req.params.name);
    if (!MANIFEST_NAME.test(name)) throw apiError('INVALID_NAME', { name });
    if (deps.index.records.has(name)) throw apiError('NAME_TAKEN', `a server named "${name}" exists: delete or rename it first`);
    // A name not deleted (or no longer kept) is the service's 404 NOT_DELETED.
    // Only its owner and the admins bring it back (under access: owner; read from the manifest kept of it).
    const who = deps.access.requester(req.headers);
    // Room for one more of its owner's servers (capacity.perPerson.servers), held until the index has it back.
    let held: { bind(name: string): void; release(): void } | undefined;
    try {
      await storeCall(() => persistence().undelete(name, (text) => {
        const kept = parseManifest(name, text);
        const server = kept.kind === 'ok' ? kept.server : undefined;
        // Someone it was never shared with learns not even that it is kept: the answer to a name not deleted.
        if (!deps.access.allows(who, server)) throw apiError('NOT_DELETED', { name, days: deps.retainDeletedDays ?? 7 });
        if (!deps.access.manages(who, server)) throw apiError('OWNER_ONLY', { server: name, act: 'undelete it' });
        const quota = deps.quotas?.claimServer(ownerOf(server));
        if (quota && 'refused' in quota) throw quotaExceeded(`server "${name}" was not brought back`, quota.refused);
        held = quota;
      }));
    } catch (error) {
      held?.release();
      throw error;
    }
    held?.bind(name);
    deps.commands.enqueue(name);
    // Its files are back once the controller has taken the workspace step after the restore.
    const record = await deps.commands.waitFor(name, (r) => Boolean(r?.server?.status?.port && r.server.status.workspacePath), deps.startTimeoutMs);
    if (!record?.server) throw apiError('RESTORE_FAILED', { name });
    res.status(201).json(createdView(record));
  });
}

/** A snapshot as the API shows it. */
export function snapshotView(s: SnapshotInfo) {
  return {
    id: s.id, created_at: s.createdAt, reason: s.reason, files: s.files, bytes: s.bytes,
    uploaded_bytes: s.uploadedBytes, duration_ms: Math.round(s.durationMs), skipped: s.skipped,
  };
}

/** A failing store answers 503 with what to do; everything else passes. */
async function storeCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof StoreError) throw apiError('PERSISTENCE_UNAVAILABLE', { failure: error.message, hint: error.hint });
    if (error instanceof FilesUnavailable) throw apiError('SERVER_FILES_UNAVAILABLE', { failure: error.message });
    throw error;
  }
}
