// What every /servers route is given, and the acts they share: find a server by id, change
// its spec through the manifest, answer in the lifecycle envelope.
import type { Request } from 'express';
import type { Config, ExtensionGroup } from '../../config/settings.ts';
import { apiError, notFound } from '../../core/error-catalogue.ts';
import type { HttpError } from '../../core/errors.ts';
import type { CapacityGate, PortClaims, ServerCommands } from '../../index/commands.ts';
import type { QuotaGate } from '../../index/quota-gate.ts';
import type { ServerRecord } from '../../index/records.ts';
import type { ServerIndex } from '../../index/server-index.ts';
import type { LogHub } from '../../logs/index.ts';
import type { ManifestStore } from '../../manifests/store.ts';
import { displayNameOf, type EditorServer, type Phase } from '../../manifests/types.ts';
import type { StatsSampler } from '../../runtime/stats.ts';
import type { DataLayout } from '../../workspace/layout.ts';
import type { ServerAccess } from '../access.ts';
import { lifecycleView } from '../views.ts';
import type { ServerFeed } from '../server-feed.ts';
import type { PersistenceApi } from './snapshots.ts';
import type { WatchStreams } from './watch.ts';

export interface ServersDeps {
  store: ManifestStore;
  /** What the controller knows of every server, read-only. */
  index: ServerIndex;
  /** What the routes may ask of the controller: queue, wait, wake, mark for deletion. */
  commands: ServerCommands;
  /** The ports a create claims before its manifest exists (the controller's allocator). */
  ports: PortClaims;
  /** The config's workspace settings in use now (they follow the config file). */
  readonly workspace: Config['workspace'];
  /** Git URL schemes a workspace source may use now. */
  gitSchemes: () => readonly string[];
  stats: StatsSampler;
  logs: LogHub;
  layout: DataLayout;
  /** The config's extension groups, by name: those in use now (they follow the config file). */
  readonly extensionGroups: Record<string, ExtensionGroup>;
  /** Why no editor may have this port (the service's own), completing "port N is …"; else undefined. */
  excludedPort: (port: number) => string | undefined;
  /** The config's editor timeouts in use now. */
  readonly startTimeoutMs: number;
  readonly stopTimeoutMs: number;
  /** The git repository and file that declare this server when a GitOps repository owns it (src/gitops/). */
  ownerOf?: (name: string) => { repository: string; file: string } | undefined;
  /** Who may see and drive which server (the config's `access` policy). */
  access: ServerAccess;
  /** The capacity limits a start passes (409 CAPACITY_EXCEEDED before anything is written); without it, none. */
  capacity?: CapacityGate;
  /** The per-person limit on servers a create passes (409 QUOTA_EXCEEDED before anything is written); without it, none. */
  quotas?: QuotaGate;
  /** The watch streams of GET /servers?watch=1; without them the route answers only the list. */
  watch?: WatchStreams;
  /** The records serialised once per change: GET /servers and GET /servers/{id} answer from it; without it, each is built per request. */
  feed?: ServerFeed;
  /** How long a deleted server is kept (persistence.retainDeletedDays), as the undelete's 404 says; default 7. */
  readonly retainDeletedDays?: number;
  /** Snapshots at the persistence target (DEVBOX_PERSIST_TO); without one, the snapshot routes answer 409. */
  persistence?: PersistenceApi;
}

export const phaseIs = (...phases: Phase[]) => (record: ServerRecord | undefined) =>
  record?.server?.status?.phase !== undefined && phases.includes(record.server.status.phase);

export function folderMissing(store: ManifestStore): HttpError {
  return apiError('MANIFESTS_FOLDER_MISSING', { dir: store.dir });
}

/** The record behind an :id, or 404: also when the requester may not see it, which answers as an unknown id does. */
export function findServer(deps: Pick<ServersDeps, 'index' | 'access'>, req: Request): ServerRecord {
  const { index } = deps;
  const id = String(req.params.id);
  const name = index.nameOfUid(id);
  const record = name === undefined ? undefined : index.records.get(name);
  if (!record?.server || !deps.access.sees(req, record.server)) throw notFound(id);
  return record;
}

/** Changes the spec through the store; 404 if the file vanished, 409 if it is now invalid. */
export async function updateSpec(
  deps: ServersDeps, record: ServerRecord, change: (server: EditorServer, set: (path: string[], value: unknown) => void) => void,
): Promise<void> {
  const { store, commands } = deps;
  // Read-modify-write that starts over when the file changed under it (a ConflictError, 409,
  // when it keeps changing). metadata.generation is counted by the store, not written here.
  // A repository-owned server's file follows the repository: a change that would alter it is refused.
  const owned = ownedByRepository(deps, record, (file) => `change ${file}`);
  const result = await store.update(record.name, (doc, server) => {
    const before = owned && doc.toString();
    change(server, (path, value) => doc.setIn(path, value));
    if (owned && doc.toString() !== before) throw owned;
  });
  if (result === 'missing') {
    // A server paused by a missing folder is still there: say why it cannot change now.
    if ((await store.folderIdentity()) === undefined) throw folderMissing(store);
    throw notFound(record.server!.metadata.uid ?? record.name);
  }
  if (result === 'invalid') {
    throw apiError('MANIFEST_INVALID', { file: store.fileOf(record.name), problems: record.problems ?? [] });
  }
  commands.enqueue(record.name);
}

/**
 * 409 for a change to a server a GitOps repository owns, which the next sync would set back.
 * `instead` says what to do in the repository, given the file's path there.
 */
export function ownedByRepository(deps: ServersDeps, record: ServerRecord, instead: (file: string) => string): HttpError | undefined {
  const owner = deps.ownerOf?.(record.name);
  if (!owner) return undefined;
  return apiError('MANAGED_BY_GIT', {
    server: record.server ? displayNameOf(record.server) : record.name, repository: owner.repository, instead: instead(owner.file),
  });
}

export function envelope(record: ServerRecord, message: string) {
  return { status: 'success', message, data: lifecycleView(record) };
}
