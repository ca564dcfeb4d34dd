// What every /servers route is given, and the acts they share: find a server by id, change
// its spec through the manifest, answer in the lifecycle envelope.
import { existsSync } from 'node:fs';
import type { Request } from 'express';
import type { ExtensionGroup } from '../../config/settings.ts';
import type { Controller } from '../../controller/controller.ts';
import type { ServerRecord } from '../../controller/reconciler.ts';
import { HttpError, notFound } from '../../core/errors.ts';
import type { LogHub } from '../../logs/index.ts';
import type { ManifestStore } from '../../manifests/store.ts';
import type { EditorServer, Phase } from '../../manifests/types.ts';
import type { StatsSampler } from '../../runtime/stats.ts';
import type { DataLayout } from '../../workspace/layout.ts';
import { lifecycleView } from '../views.ts';

export interface ServersDeps {
  store: ManifestStore;
  controller: Controller;
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
}

export const phaseIs = (...phases: Phase[]) => (record: ServerRecord | undefined) =>
  record?.server?.status?.phase !== undefined && phases.includes(record.server.status.phase);

export function folderMissing(store: ManifestStore): HttpError {
  return new HttpError(503, 'MANIFESTS_FOLDER_MISSING',
    `the manifests folder ${store.dir} is missing: bring it back (the service waits for it), then try again`);
}

/** The record behind an :id, or 404. */
export function findServer(deps: ServersDeps, req: Request): ServerRecord {
  const reconciler = deps.controller.reconciler;
  const id = String(req.params.id);
  const name = reconciler.nameOfUid(id);
  const record = name === undefined ? undefined : reconciler.records.get(name);
  if (!record?.server) throw notFound(id);
  return record;
}

/** Changes the spec through the store; 404 if the file vanished, 409 if it is now invalid. */
export async function updateSpec(
  deps: ServersDeps, record: ServerRecord, change: (server: EditorServer, set: (path: string[], value: unknown) => void) => void,
): Promise<void> {
  const { store, controller } = deps;
  // Read-modify-write that starts over when the file changed under it (a ConflictError, 409,
  // when it keeps changing). metadata.generation is counted by the store, not written here.
  const result = await store.update(record.name, (doc, server) => {
    change(server, (path, value) => doc.setIn(path, value));
  });
  if (result === 'missing') {
    // A server paused by a missing folder is still there: say why it cannot change now.
    if (!existsSync(store.dir)) throw folderMissing(store);
    throw notFound(record.server!.metadata.uid ?? record.name);
  }
  if (result === 'invalid') {
    throw new HttpError(409, 'MANIFEST_INVALID', `the manifest ${store.fileOf(record.name)} is invalid; fix it by hand first: ${(record.problems ?? []).join('; ')}`);
  }
  controller.enqueue(record.name);
}

export function envelope(record: ServerRecord, message: string) {
  return { status: 'success', message, data: lifecycleView(record) };
}
