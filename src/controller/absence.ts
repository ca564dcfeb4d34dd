// A manifest that is missing, invalid or deleted. Removing a file is never a request to delete:
// only the API or a deletion mark deletes a server's files.
import { sameData } from '../core/equal.ts';
import type { ReconcileContext } from './context.ts';
import type { ReconcileResult } from './queue.ts';
import { stopEditorsOf } from './supervision.ts';

/** How often a server paused by a missing manifests folder looks again. */
const FOLDER_RECHECK_MS = 2000;

/** Stops the server's editors and removes what the server owns; the manifest is the caller's. Only for a deliberate delete. */
export async function teardown(ctx: ReconcileContext, name: string): Promise<void> {
  await stopEditorsOf(ctx, name);
  ctx.deps.logs.event(name, 'INFO', 'deleted');
  await ctx.deps.runtime.remove(name);
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
  ctx.cache.deletions.delete(name);
  ctx.identities.forget(name);
  persistence?.serverDeleted(name);
  return forget(ctx, name);
}

/** The controller stops knowing the server (its files, if any, stay). */
export function forget(ctx: ReconcileContext, name: string): ReconcileResult {
  void ctx.operations.cancel(name, 'the server is no longer managed');
  ctx.cache.drop(name);
  ctx.events.forget(name);
  ctx.deps.ports.release(name);
  ctx.emit('deleted', name);
  ctx.emit('changed', name);
}

export function markInvalid(ctx: ReconcileContext, name: string, errors: string[]): ReconcileResult {
  const { records } = ctx.cache;
  const record = records.get(name) ?? { name };
  record.absence = undefined;
  const changed = !sameData(record.problems ?? null, errors ?? null);
  record.problems = errors;
  records.set(name, record);
  if (changed) {
    ctx.log(`manifest ${ctx.deps.store.fileOf(name)} is invalid; its editor is left as it is:\n  ${errors.join('\n  ')}`);
    if (record.server) ctx.deps.logs.event(name, 'ERROR', `manifest is invalid: ${errors.join('; ')}`);
    ctx.events.recordInvalid(name, errors);
  }
  ctx.emit('changed', name);
}

/**
 * The file is missing. A folder that vanished or was replaced pauses the server (nothing
 * stopped). A file gone from its folder stops the editor after the grace period, unless it
 * comes back (an editor's delete-then-write save); the server's files are kept either way.
 */
export async function whileMissing(ctx: ReconcileContext, name: string): Promise<ReconcileResult> {
  const { store, config, logs } = ctx.deps;
  if (ctx.cache.deletions.has(name)) return deleteServer(ctx, name);
  const record = ctx.cache.records.get(name);
  const live = ctx.cache.lives.get(name);
  if (!record && !live?.ref) return forget(ctx, name);
  const file = store.fileOf(name);
  const folder = await store.folderIdentity();
  if (folder === undefined || (live?.seenIn !== undefined && folder !== live.seenIn)) {
    if (live) live.missingSince = undefined;
    setAbsence(ctx, name, folder === undefined
      ? `the manifests folder ${store.dir} is missing: nothing is stopped or deleted until it is back`
      : `${file} is not in the folder that replaced the manifests folder it was in: nothing is stopped or deleted until it is back`);
    return { requeueAfterMs: FOLDER_RECHECK_MS };
  }
  const graceMs = config.controller.orphanGraceSeconds * 1000;
  const state = ctx.cache.live(name);
  const since = (state.missingSince ??= Date.now());
  const left = since + graceMs - Date.now();
  if (left > 0) {
    const message = `${file} is missing: its editor is stopped at ${new Date(since + graceMs).toISOString()} unless the file comes back; its files are kept`;
    if (setAbsence(ctx, name, message)) {
      ctx.log(message);
      if (record) logs.event(name, 'WARN', message);
    }
    return { requeueAfterMs: left };
  }
  state.probe = undefined;
  if (state.ref) ctx.cache.stoppedWhileMissing.set(name, state.ref);
  await stopEditorsOf(ctx, name);
  const message = `${file} has been missing for ${graceMs / 1000} s: its editor is stopped; its workspace and editor data are kept (DELETE /servers/{id} deletes a server)`;
  ctx.log(message);
  if (record) logs.event(name, 'WARN', message);
  return forget(ctx, name);
}

/** Records what happens while the file is missing; true when that changed. */
function setAbsence(ctx: ReconcileContext, name: string, message: string): boolean {
  const record = ctx.cache.records.get(name);
  if (!record || record.absence === message) return false;
  record.absence = message;
  ctx.emit('changed', name);
  return true;
}
