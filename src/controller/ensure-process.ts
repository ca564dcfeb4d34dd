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
export async function observeProcess(
  ctx: ReconcileContext, name: string, status: EditorServerStatus, port: number,
): Promise<{ alive: boolean; wait?: ReconcileResult }> {
  const { runtime } = ctx.deps;
  const live = ctx.cache.live(name);
  if (status.pid && status.pid === ctx.cache.stoppedWhileMissing.get(name)) clearProcess(status);
  ctx.cache.stoppedWhileMissing.delete(name);
  if (!live.identity && status.pid) {
    const recorded = status.pidStartTicks === undefined ? undefined : { pid: status.pid, startTicks: status.pidStartTicks };
    const owned = recorded && runtime.owns(name, recorded);
    if (recorded && owned) {
      adoptEditor(ctx, name, recorded, owned.endpoint);
      live.healthy = (await checkHealth(owned.endpoint ?? runtime.endpointOf(port))).ok;
    } else if (!recorded || runtime.isAlive(recorded)) {
      ctx.warn(name, `status.pid ${status.pid} is not this server's editor (a copied or hand-written status?): ignored, and never signalled`);
      clearProcess(status);
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
