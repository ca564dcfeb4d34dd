// Status commits: status is built on a copy through a reconcile, then written in one go, and
// only when it changed (the store compares).
import type { ServerRecord } from '../index/records.ts';
import type { EditorServerStatus, Phase } from '../manifests/types.ts';
import { deriveConditions } from './conditions.ts';
import type { ReconcileContext } from './context.ts';

/** Phases a reconcile ends in once it has done what the spec asks (or found it cannot). */
const SETTLED: ReadonlySet<Phase> = new Set(['Running', 'Stopped', 'Failed']);

/**
 * Writes status (and a new uid) when it changed, and updates the cache. A settled phase records
 * the generation it settled for as observedGeneration: so it lags while the work (a stop, a
 * start, an install) is under way, and says "done" only when it is.
 */
export async function commitStatus(
  ctx: Pick<ReconcileContext, 'deps' | 'table' | 'unannounced'>, record: ServerRecord, uid: string, status: EditorServerStatus,
): Promise<'ok' | 'gone'> {
  const server = record.server!;
  if (SETTLED.has(status.phase) && server.metadata.generation !== undefined) status.observedGeneration = server.metadata.generation;
  deriveConditions(status);
  const clean = JSON.parse(JSON.stringify(status)) as EditorServerStatus;
  const result = await ctx.deps.store.writeStatus(record.name, clean, uid);
  if (result === 'missing' || result === 'invalid') return 'gone';
  const before = server.status;
  ctx.table.events.recordStatus(record.name, before, clean);
  server.metadata.uid = uid;
  server.status = clean;
  ctx.table.setRecord(record);
  // Only news is told: a reconcile that found everything as it was costs its readers nothing.
  if (ctx.unannounced.delete(record.name) || result === 'updated') ctx.table.changed(record.name);
  // Every stop ends here, whoever asked (API, manifest edit, idle, capacity, a crash): the
  // reference goes once the editor is gone.
  if (before?.runtimeRef && !clean.runtimeRef) ctx.deps.persistence?.stopped(record.name);
  return 'ok';
}

/** Clears the editor fields of a status: no editor runs. */
export function clearProcess(status: EditorServerStatus): EditorServerStatus {
  status.runtimeRef = null;
  delete status.startTime;
  return status;
}
