// A manifest that is missing, invalid or deleted. Removing a file is never a request to delete:
// only the API or a deletion mark deletes a server's files.
import { sameData } from '../core/equal.ts';
import type { RuntimeRef } from '../runtime/interface.ts';
import type { ReconcileContext } from './context.ts';
import { PerServer } from './per-server.ts';
import type { ReconcileResult } from './queue.ts';
import { stopEditorsOf } from './supervision.ts';

/** How often a server paused by a missing manifests folder looks again. */
const FOLDER_RECHECK_MS = 2000;

/** Where a server's manifest was last seen, and since when it is missing. */
export interface PresenceState {
  /** The manifests folder (device and inode) the file was last read from. */
  seenIn?: string;
  /** Since when the file has been missing from the folder it was in. */
  missingSince?: number;
}

export class Presence extends PerServer<PresenceState> {
  /** Names whose deletion was asked for while their file is missing or invalid (it cannot carry the mark). */
  readonly deletions = new Set<string>();
  /** Editors stopped because their file stayed missing: a status naming one, when the file is back, is stale. */
  readonly stoppedWhileMissing = new Map<string, RuntimeRef>();

  constructor() {
    super(() => ({}));
  }
}

/** Stops the server's editors and removes what the server owns; the manifest is the caller's. Only for a deliberate delete. */
export async function teardown(ctx: ReconcileContext, name: string): Promise<void> {
  await stopEditorsOf(ctx, name);
  ctx.deps.logs.event(name, 'INFO', 'deleted');
  await ctx.deps.storage.remove(name);
  await ctx.deps.logs.untrack(name, { remove: true });
}

/** A deliberate delete (API, or a deletion mark): editor, files, the manifest, and the uid go. */
export async function deleteServer(ctx: ReconcileContext, name: string): Promise<ReconcileResult> {
  const { store } = ctx.deps;
  // An install under way ends first: its process writes into folders about to go.
  await ctx.operations.cancel(name, 'the server is deleted');
  const persistence = ctx.deps.persistence;
  if (persistence) {
    // Its last changes are kept (bounded), so an undelete within the retention brings them back.
    await stopEditorsOf(ctx, name);
    await persistence.deleting(name);
  }
  await teardown(ctx, name);
  await store.remove(name, ctx.identities.uidOf(name)).catch((error) =>
    ctx.log(`deleted server ${name}, but its manifest ${store.fileOf(name)} could not be removed: ${(error as Error).message}`));
  ctx.presence.deletions.delete(name);
  ctx.identities.forget(name);
  persistence?.serverDeleted(name);
  return forget(ctx, name);
}

/** The controller stops knowing the server (its files, if any, stay): every part forgets it. */
export function forget(ctx: ReconcileContext, name: string): ReconcileResult {
  void ctx.operations.cancel(name, 'the server is no longer managed');
  for (const part of [ctx.presence, ctx.health, ctx.crashes, ctx.placement, ctx.sources, ctx.devcontainer, ctx.settings, ctx.extensions, ctx.idle]) part.forget(name);
  ctx.unannounced.delete(name);
  ctx.table.drop(name);
  ctx.deps.ports.release(name);
  ctx.table.deleted(name);
  ctx.table.changed(name);
}

export function markInvalid(ctx: ReconcileContext, name: string, errors: string[]): ReconcileResult {
  const { records } = ctx.table;
  const record = records.get(name) ?? { name };
  record.absence = undefined;
  const changed = !sameData(record.problems ?? null, errors ?? null);
  record.problems = errors;
  records.set(name, record);
  if (changed) {
    ctx.log(`manifest ${ctx.deps.store.fileOf(name)} is invalid; its editor is left as it is:\n  ${errors.join('\n  ')}`);
    if (record.server) ctx.deps.logs.event(name, 'ERROR', `manifest is invalid: ${errors.join('; ')}`);
    ctx.table.events.recordInvalid(name, errors);
  }
  ctx.table.changed(name);
}

/**
 * The file is missing. A folder that vanished or was replaced pauses the server (nothing
 * stopped). A file gone from its folder stops the editor after the grace period, unless it
 * comes back (an editor's delete-then-write save); the server's files are kept either way.
 */
export async function whileMissing(ctx: ReconcileContext, name: string): Promise<ReconcileResult> {
  const { store, config, logs } = ctx.deps;
  if (ctx.presence.deletions.has(name)) return deleteServer(ctx, name);
  const record = ctx.table.records.get(name);
  const ref = ctx.table.editorOf(name);
  if (!record && !ref) return forget(ctx, name);
  const file = store.fileOf(name);
  const folder = await store.folderIdentity();
  const presence = ctx.presence.of(name);
  if (folder === undefined || (presence.seenIn !== undefined && folder !== presence.seenIn)) {
    presence.missingSince = undefined;
    setAbsence(ctx, name, folder === undefined
      ? `the manifests folder ${store.dir} is missing: nothing is stopped or deleted until it is back`
      : `${file} is not in the folder that replaced the manifests folder it was in: nothing is stopped or deleted until it is back`);
    return { requeueAfterMs: FOLDER_RECHECK_MS };
  }
  const graceMs = config.controller.orphanGraceSeconds * 1000;
  const since = (presence.missingSince ??= Date.now());
  const left = since + graceMs - Date.now();
  if (left > 0) {
    const message = `${file} is missing: its editor is stopped at ${new Date(since + graceMs).toISOString()} unless the file comes back; its files are kept`;
    if (setAbsence(ctx, name, message)) {
      ctx.log(message);
      if (record) logs.event(name, 'WARN', message);
    }
    return { requeueAfterMs: left };
  }
  ctx.health.of(name).probe = undefined;
  if (ref) ctx.presence.stoppedWhileMissing.set(name, ref);
  await stopEditorsOf(ctx, name);
  const message = `${file} has been missing for ${graceMs / 1000} s: its editor is stopped; its workspace and editor data are kept (DELETE /servers/{id} deletes a server)`;
  ctx.log(message);
  if (record) logs.event(name, 'WARN', message);
  return forget(ctx, name);
}

/** Records what happens while the file is missing; true when that changed. */
function setAbsence(ctx: ReconcileContext, name: string, message: string): boolean {
  const record = ctx.table.records.get(name);
  if (!record || record.absence === message) return false;
  record.absence = message;
  ctx.table.changed(name);
  return true;
}
