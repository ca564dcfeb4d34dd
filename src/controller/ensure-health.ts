// Step: a running editor's health. Starting until /healthz answers, Running once it does, Failed
// (Unhealthy) when it never does or stops answering, and back to Running when it answers again.
// While the runtime says why the editor does not serve (a problem: an image that cannot be
// pulled, its node not ready), status says so instead: Starting with that reason if it had not
// served yet, Failed if it had; when the problem goes, /healthz decides again.
import type { EditorServerStatus, Phase } from '../manifests/types.ts';
import { isRunning, sameRef, type EditorEndpoint, type EditorProblem } from '../runtime/interface.ts';
import type { Live, ServerRecord } from './cache.ts';
import type { ReconcileContext } from './context.ts';
import type { ReconcileResult } from './queue.ts';

/** How often an editor that missed its start deadline is asked /healthz again. */
const UNHEALTHY_RECHECK_MS = 10_000;
/** How long an editor adopted Running is given to answer its first /healthz before it is Starting like any other. */
const ADOPTED_PROBE_MS = 1000;
/** An editor that stays up this long forgets its earlier crashes. */
export const STABLE_AFTER_MS = 60_000;

/**
 * What a refresh (or the background heartbeat read) saw on /healthz. Not answering: the next
 * reconcile probes again before calling it Running. Answering: it is Running, whatever an earlier
 * probe concluded. True when the verdict changed (the server is worth a reconcile).
 */
export function recordHealth(live: Live | undefined, answered: boolean): boolean {
  if (!live?.ref) return false;
  if (answered) {
    const changed = !live.healthy || live.probeFailed !== undefined;
    live.healthy = true;
    live.probeFailed = undefined;
    return changed;
  }
  if (!live.healthy) return false;
  // It was up and stopped answering: Failed (Unhealthy), asked again every 10 s.
  live.healthy = false;
  live.probeFailed = 'code-server stopped answering /healthz';
  return true;
}

export async function observeRunning(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus, live: Live, port: number,
): Promise<ReconcileResult> {
  const name = record.name;
  const { runtime } = ctx.deps;
  if (!sameRef(status.runtimeRef, live.ref)) {
    status.runtimeRef = live.ref;
    status.startTime ??= new Date().toISOString();
  }
  // An editor adopted without a port of its own answers on the one status recorded.
  live.endpoint ??= runtime.adopt(name, live.ref!, port)?.endpoint;
  const endpoint = live.endpoint;
  const seen = runtime.state(name, live.ref!);
  const problem = noticeProblem(ctx, name, live, status, seen.state === 'starting' || seen.state === 'running' ? seen.problem : undefined);
  if (problem) {
    Object.assign(status, { phase: (problem.whileRunning || live.probeFailed ? 'Failed' : 'Starting') as Phase, reason: problem.reason, message: problem.message });
    await ctx.commit(record, uid, status);
    // The runtime says when it goes (onChange); a probe that gave up is retried meanwhile, as for Unhealthy.
    return live.probeFailed ? { requeueAfterMs: UNHEALTHY_RECHECK_MS } : undefined;
  }
  // Adopted Running at a restart: asked once, now, so one that answers stays Running (not
  // Starting until a background probe comes back, for every running editor of the fleet).
  if (live.adopted) {
    live.adopted = undefined;
    if (!live.healthy && status.phase === 'Running' && endpoint && (await runtime.health(endpoint, ADOPTED_PROBE_MS)).ok) recordHealth(live, true);
  }
  // It answers after all (a slow first start): recover without anyone asking.
  if (live.probeFailed && endpoint && (await runtime.health(endpoint)).ok) recordHealth(live, true);
  if (live.healthy) {
    if (status.phase !== 'Running') ctx.deps.logs.event(name, 'INFO', `started: code-server answers on port ${port}`);
    Object.assign(status, { phase: 'Running' as Phase, reason: undefined, message: undefined });
    const stableFor = Date.now() - Date.parse(status.startTime ?? '');
    if (live.crashTimes.length > 0 && stableFor >= STABLE_AFTER_MS) live.crashTimes = [];
  } else if (live.probeFailed) {
    Object.assign(status, { phase: 'Failed' as Phase, reason: 'Unhealthy', message: live.probeFailed });
    await ctx.commit(record, uid, status);
    return { requeueAfterMs: UNHEALTHY_RECHECK_MS };
  } else {
    Object.assign(status, { phase: 'Starting' as Phase, reason: undefined, message: undefined });
    if (!live.probe && endpoint) startProbe(ctx, name, live, endpoint);
  }
  await ctx.commit(record, uid, status);
  if (live.crashTimes.length > 0) return { requeueAfterMs: STABLE_AFTER_MS };
}

/**
 * Follows the problem the runtime reports for the live editor: said once in the server's events
 * when it comes or changes, and when it goes. An editor that was Running when it came has stopped
 * serving: once the problem goes it is Starting again until /healthz answers (a fresh probe).
 */
function noticeProblem(
  ctx: ReconcileContext, name: string, live: Live, status: EditorServerStatus, problem: EditorProblem | undefined,
): Live['problem'] {
  const before = live.problem;
  if (!problem) {
    if (before) {
      ctx.deps.logs.event(name, 'INFO', `${before.reason} is over: waiting for code-server to answer /healthz`);
      live.problem = undefined;
      live.healthy = false;
      live.probeFailed = undefined;
    }
    return undefined;
  }
  if (before?.reason === problem.reason && before.message === problem.message) return before;
  ctx.deps.logs.event(name, 'WARN', `${problem.reason}: ${problem.message}`);
  const whileRunning = before?.whileRunning ?? (live.healthy && status.phase === 'Running');
  live.problem = { reason: problem.reason, message: problem.message, whileRunning };
  return live.problem;
}

/** Polls /healthz in the background and puts the name back on the queue when it answers. */
export function startProbe(ctx: ReconcileContext, name: string, live: Live, endpoint: EditorEndpoint): void {
  const token = Symbol(name);
  live.probe = token;
  const ref = live.ref;
  const { runtime } = ctx.deps;
  const timeoutMs = ctx.deps.config.editor.readyTimeoutSeconds * 1000;
  void runtime.waitReady(endpoint, Date.now() + timeoutMs, () => live.probe !== token || live.ref !== ref).then((ok) => {
    if (live.probe !== token) return;
    live.probe = undefined;
    if (ok) live.healthy = true;
    else if (live.ref === ref && ref && isRunning(runtime.state(name, ref).state)) {
      live.probeFailed = `code-server did not answer /healthz on port ${endpoint.port} within ${timeoutMs / 1000} s`;
      ctx.deps.logs.event(name, 'ERROR', live.probeFailed);
    }
    ctx.deps.enqueue(name);
  });
}
