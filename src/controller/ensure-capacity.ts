// Step: room for the editor before it is spawned (capacity.ts decides, for the API too), and
// stopping an idle editor whose room another start needs (whenFull stopIdlest).
import type { ServerRecord } from '../index/records.ts';
import { displayNameOf, type EditorServerStatus, type Phase } from '../manifests/types.ts';
import type { ReconcileContext } from './context.ts';
import type { ReconcileResult } from './queue.ts';
import { clearProcess } from './status-commit.ts';
import { stopProcess } from './supervision.ts';

/**
 * 'admitted' when the editor may start now (its slot is held until it runs or the start gives
 * up: release it after the launch). Otherwise status says why (Pending, CapacityExceeded,
 * QuotaExceeded or MakingRoom) and the server waits, without polling, for room: an editor
 * stopping, memory given back, or the config's limits changing queue it again.
 */
export async function ensureCapacity(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus,
): Promise<'admitted' | ReconcileResult | undefined> {
  const capacity = ctx.deps.capacity;
  if (!capacity) return 'admitted';
  const name = record.name;
  const admission = capacity.admit(name);
  if (admission.kind === 'admitted') return 'admitted';
  // A per-person limit (capacity.perPerson) is its own reason: the person, not the fleet, is full.
  const quota = admission.kind === 'refused' ? admission.quota : undefined;
  const reason = quota ? 'QuotaExceeded' : admission.kind === 'refused' ? 'CapacityExceeded' : 'MakingRoom';
  const message = admission.kind !== 'refused' ? admission.message
    : `${admission.message}; it starts by itself when ${quota ? `${quota.person}'s use drops below the limit` : 'room frees'}`;
  if (admission.kind === 'refused') capacity.wait(name);
  // Said once per new situation, not at every look.
  if (record.server?.status?.message !== message) ctx.deps.logs.event(name, admission.kind === 'refused' ? 'WARN' : 'INFO', `not started: ${message}`);
  await ctx.commit(record, uid, { ...clearProcess(status), phase: 'Pending', reason, message });
  return undefined;
}

/** Stops the editor, through the normal stop with its grace, to make room for `starter`. */
export async function stopForCapacity(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus, starter: string,
): Promise<ReconcileResult | undefined> {
  const name = record.name;
  const starting = ctx.table.serverNamed(starter);
  const wanted = starting ? displayNameOf(starting) : starter;
  await stopProcess(ctx, record, uid, status, `stopped to make room for server "${wanted}"`);
  Object.assign(status, {
    phase: 'Stopped' as Phase,
    reason: 'StoppedForCapacity',
    message: `stopped to make room for server "${wanted}" (${starter}): capacity was full and this was the least recently active idle editor; start it again when you need it`,
  });
  await ctx.commit(record, uid, status);
  ctx.log(`server ${name} stopped to make room for ${starter} (capacity full, whenFull stopIdlest)`);
  return undefined;
}
