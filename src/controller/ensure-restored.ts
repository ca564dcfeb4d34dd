// Step: a server whose work is being restored from a snapshot (a fresh container, an undelete, a
// chosen snapshot put back) waits here, before its workspace, settings and editor are touched, so
// nothing the controller writes is taken for newer local data. The restore itself runs in
// src/persistence; this step only shows where it stands, as the `Restored` condition.
import type { ServerRecord } from '../index/records.ts';
import type { EditorServerStatus } from '../manifests/types.ts';
import { setCondition } from './conditions.ts';
import type { ReconcileContext } from './context.ts';
import type { ReconcileResult } from './queue.ts';

/** Where a server's restore stands. `changed` settles when it moves on (an attempt ends). */
export type RestoreState =
  | { kind: 'restoring'; message: string; changed: Promise<void> }
  | { kind: 'failed'; message: string; changed: Promise<void> }
  | { kind: 'restored'; message: string };

/** What the controller tells persistence, and asks it (src/persistence/service-persistence.ts). */
export interface PersistenceHooks {
  /** Where the server's restore stands; undefined when there is none and the server may go on. */
  restoreState(name: string): RestoreState | undefined;
  /** A finished restore is in the server's status: it can be forgotten. */
  restoreRecorded(name: string): void;
  /** The server's editor stopped and its process is gone (a stop by the API or a manifest edit, idle autostop, capacity, a crash). */
  stopped(name: string): void;
  /** A deliberate delete is about to remove the server's files (its editor is stopped): its last changes are kept, within a bound. */
  deleting(name: string): Promise<void>;
  /** A deliberate delete finished: the manifest and files are gone. */
  serverDeleted(name: string): void;
}

/**
 * 'ready' when no restore holds the server (or the one that did is recorded as done); 'gone' if
 * the file vanished; else the queue waits for the restore's next step. A failed attempt leaves
 * the condition False with its error, and persistence tries again.
 */
export async function ensureRestored(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus,
): Promise<'ready' | 'gone' | ReconcileResult> {
  const hooks = ctx.deps.persistence;
  const name = record.name;
  const state = hooks?.restoreState(name);
  if (!hooks || !state) return 'ready';
  const before = status.conditions?.find((c) => c.type === 'Restored');
  if (state.kind === 'restored') {
    setCondition(status, { type: 'Restored', status: 'True', reason: 'Restored', message: state.message });
    if (status.reason === 'Restoring' || status.reason === 'RestoreFailed') Object.assign(status, { reason: undefined, message: undefined });
    if ((await ctx.commit(record, uid, status)) === 'gone') return 'gone';
    hooks.restoreRecorded(name);
    if (before?.status !== 'True') ctx.deps.logs.event(name, 'INFO', `restored: ${state.message}`);
    return 'ready';
  }
  const reason = state.kind === 'failed' ? 'RestoreFailed' : 'Restoring';
  Object.assign(status, { phase: 'Provisioning', reason, message: state.message });
  setCondition(status, { type: 'Restored', status: 'False', reason, message: state.message });
  if (before?.reason !== reason || before.message !== state.message) ctx.deps.logs.event(name, state.kind === 'failed' ? 'WARN' : 'INFO', state.message);
  if ((await ctx.commit(record, uid, status)) === 'gone') return 'gone';
  return { waitFor: state.changed };
}
