// Step: the process as it really is. A pid in status is adopted only if /proc shows it is the
// editor launched for this very server; a file saying so is never enough.
import type { EditorServerStatus } from '../manifests/types.ts';
import { checkHealth } from '../runtime/health.ts';
import type { EditorEndpoint, EditorHandle } from '../runtime/processes.ts';
import type { ReconcileContext } from './context.ts';
import type { ReconcileResult } from './queue.ts';
import { clearProcess } from './status-commit.ts';

/** How long a dead editor's unreported exit is waited for before it is recorded without a code. */
const EXIT_WAIT_MS = 1000;

/** Takes over an editor that was already running (verified in /proc to be this server's). */
export function adoptEditor(ctx: ReconcileContext, name: string, identity: EditorHandle, endpoint: EditorEndpoint | undefined): void {
  const live = ctx.cache.live(name);
  live.identity = identity;
  live.endpoint = endpoint;
  ctx.deps.runtime.watch(name, identity);
}

/**
 * Whether the server's editor is alive, after adopting the one its status names when /proc
 * says it is ours; or a result to return when its exit is about to be reported.
 */
/**
 * A pid in a status read from disk, before this service has seen its editor: kept when it is this
 * server's editor ('owned'), or dead (its exit is handled as a crash); a live process that is not
 * is cleared from the status, with a warning, and never signalled. Run before the status is shown,
 * so no answer ever names a process the service did not launch.
 */
export function distrustForeignPid(ctx: ReconcileContext, name: string, status: EditorServerStatus): 'owned' | 'dead' | 'cleared' {
  const { runtime } = ctx.deps;
  const recorded = status.pid && status.pidStartTicks !== undefined ? { pid: status.pid, startTicks: status.pidStartTicks } : undefined;
  if (recorded && runtime.owns(name, recorded)) return 'owned';
  if (recorded && !runtime.isAlive(recorded)) return 'dead';
  ctx.warn(name, `status.pid ${status.pid} is not this server's editor (a copied or hand-written status?): ignored, and never signalled`);
  clearProcess(status);
  if (status.phase === 'Running' || status.phase === 'Starting' || status.phase === 'Stopping') status.phase = 'Pending';
  return 'cleared';
}

export async function observeProcess(
  ctx: ReconcileContext, name: string, status: EditorServerStatus, port: number,
): Promise<{ alive: boolean; wait?: ReconcileResult }> {
  const { runtime } = ctx.deps;
  const live = ctx.cache.live(name);
  if (status.pid && status.pid === ctx.cache.stoppedWhileMissing.get(name)) clearProcess(status);
  ctx.cache.stoppedWhileMissing.delete(name);
  if (!live.identity && status.pid && distrustForeignPid(ctx, name, status) === 'owned') {
    const recorded = { pid: status.pid, startTicks: status.pidStartTicks! };
    const owned = runtime.owns(name, recorded);
    if (owned) {
      adoptEditor(ctx, name, recorded, owned.endpoint);
      live.healthy = (await checkHealth(owned.endpoint ?? runtime.endpointOf(port))).ok;
    }
  }
  const alive = live.identity !== undefined && runtime.isAlive(live.identity);
  if (!alive && live.identity) {
    // Dead but not reaped yet: its exit, with the code or signal that ended it, is moments
    // away and queues this name again at once. Wait for it; the requeue only bounds the wait.
    const waited = Date.now() - (live.exitWaitSince ??= Date.now());
    if (runtime.exitPending(live.identity) && waited < EXIT_WAIT_MS) {
      return { alive, wait: { requeueAfterMs: EXIT_WAIT_MS - waited, waiting: true } };
    }
    live.identity = undefined;
  }
  live.exitWaitSince = undefined;
  return { alive };
}
