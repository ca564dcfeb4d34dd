// Step: the editor as it really is, by the runtime's word. A reference in status is adopted only
// when the runtime says it is the editor launched for this very server; a file saying so is
// never enough.
import type { EditorServerStatus } from '../manifests/types.ts';
import { describeRef, isRunning, sameRef, type EditorEndpoint, type RuntimeRef } from '../runtime/interface.ts';
import type { ReconcileContext } from './context.ts';
import type { ReconcileResult } from './queue.ts';
import { clearProcess } from './status-commit.ts';

/** How long a dead editor's unreported exit is waited for before it is recorded without a code. */
const EXIT_WAIT_MS = 1000;

/** Takes over an editor that was already running (the runtime has checked it is this server's and watches it). */
export function adoptEditor(ctx: Pick<ReconcileContext, 'table' | 'health'>, name: string, ref: RuntimeRef, endpoint: EditorEndpoint | undefined): void {
  ctx.table.setEditor(name, ref, endpoint);
  ctx.health.of(name).adopted = true;
}

/**
 * A reference in a status read from disk, before this service has seen its editor: kept when it
 * is this server's editor ('owned'), or gone (its exit is handled as a crash); one naming
 * anything else (a copied or hand-written status) is cleared from the status, with a warning,
 * and never signalled. Run before the status is shown, so no answer ever names an editor the
 * service did not launch.
 */
export function distrustForeignRef(ctx: Pick<ReconcileContext, 'deps' | 'warn'>, name: string, status: EditorServerStatus): 'owned' | 'dead' | 'cleared' {
  const ref = status.runtimeRef;
  if (!ref) return 'cleared';
  const seen = ctx.deps.workload.state(name, ref).state;
  if (isRunning(seen)) return 'owned';
  if (seen === 'gone' || seen === 'exited') return 'dead';
  ctx.warn(name, `status.runtimeRef (${describeRef(ref)}) is not this server's editor (a copied or hand-written status?): ignored, and never signalled`);
  clearProcess(status);
  if (status.phase === 'Running' || status.phase === 'Starting' || status.phase === 'Stopping') status.phase = 'Pending';
  return 'cleared';
}

/**
 * Whether the server's editor is alive, after adopting the one its status names when the
 * runtime says it is ours; or a result to return when its exit is about to be reported.
 */
export async function observeProcess(
  ctx: ReconcileContext, name: string, status: EditorServerStatus, port: number,
): Promise<{ alive: boolean; wait?: ReconcileResult }> {
  const { workload, health } = ctx.deps;
  if (status.runtimeRef && sameRef(status.runtimeRef, ctx.presence.stoppedWhileMissing.get(name))) clearProcess(status);
  ctx.presence.stoppedWhileMissing.delete(name);
  if (!ctx.table.editorOf(name) && status.runtimeRef && distrustForeignRef(ctx, name, status) === 'owned') {
    const recorded = status.runtimeRef;
    const owned = workload.adopt(name, recorded, port);
    if (owned) {
      adoptEditor(ctx, name, recorded, owned.endpoint);
      ctx.health.of(name).healthy = owned.endpoint !== undefined && (await health.health(owned.endpoint)).ok;
    }
  }
  const ref = ctx.table.editorOf(name);
  if (!ref) return { alive: false };
  const crashes = ctx.crashes.of(name);
  const seen = workload.state(name, ref);
  const alive = isRunning(seen.state);
  if (!alive) {
    if (seen.state === 'exited' && seen.exit) crashes.lastExit = seen.exit;
    // Dead but its exit not collected yet: the code or signal that ended it is moments away and
    // queues this name again at once. Wait for it; the requeue only bounds the wait.
    const waited = Date.now() - (crashes.exitWaitSince ??= Date.now());
    if (seen.state === 'exited' && !seen.exit && waited < EXIT_WAIT_MS) {
      return { alive, wait: { requeueAfterMs: EXIT_WAIT_MS - waited, waiting: true } };
    }
    ctx.table.clearEditor(name);
  }
  crashes.exitWaitSince = undefined;
  return { alive };
}
