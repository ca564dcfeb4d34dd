// Step: a running editor's health. Starting until /healthz answers, Running once it does, Failed
// (Unhealthy) when it never does or stops answering, and back to Running when it answers again.
// While the runtime says why the editor does not serve (a problem: an image that cannot be
// pulled, its node not ready), status says so instead: Starting with that reason if it had not
// served yet, Failed if it had; when the problem goes, /healthz decides again.
import type { EditorServerStatus, Phase } from '../manifests/types.ts';
import type { ServerRecord } from '../index/records.ts';
import { isRunning, sameRef, type EditorEndpoint, type EditorProblem } from '../runtime/interface.ts';
import type { ReconcileContext } from './context.ts';
import { PerServer } from './per-server.ts';
import type { ReconcileResult } from './queue.ts';

/** How often an editor that missed its start deadline is asked /healthz again. */
const UNHEALTHY_RECHECK_MS = 10_000;
/** How long an editor adopted Running is given to answer its first /healthz before it is Starting like any other. */
const ADOPTED_PROBE_MS = 1000;
/** An editor that stays up this long forgets its earlier crashes. */
export const STABLE_AFTER_MS = 60_000;

/** What this step knows of a server's running editor, in memory only. */
export interface ProbeState {
  /** /healthz answered (or the heartbeat read did) since the editor started. */
  healthy: boolean;
  /** The start-up probe under way, if any (a newer one, or none, ends it). */
  probe?: symbol;
  /** Why the editor counts as Unhealthy: it never answered, or stopped answering. */
  probeFailed?: string;
  /** Taken over at start-up and not looked at since: its first look asks /healthz at once. */
  adopted?: boolean;
  /** What the runtime last said keeps the editor from serving, and whether it had been Running when it came. */
  problem?: { reason: string; message: string; whileRunning: boolean };
}

/** The probes of every server's running editor. */
export class HealthProbes extends PerServer<ProbeState> {
  constructor() {
    super(() => ({ healthy: false }));
  }

  /** Forgets what was probed: the editor is gone, or a new one starts. */
  reset(name: string): void {
    const probe = this.peek(name);
    if (probe) Object.assign(probe, { healthy: false, probe: undefined, probeFailed: undefined, problem: undefined });
  }
}

/**
 * What a refresh (or the background heartbeat read) saw on /healthz. Not answering: the next
 * reconcile probes again before calling it Running. Answering: it is Running, whatever an earlier
 * probe concluded. True when the verdict changed (the server is worth a reconcile).
 */
export function recordHealth(ctx: Pick<ReconcileContext, 'table' | 'health'>, name: string, answered: boolean): boolean {
  if (!ctx.table.editorOf(name)) return false;
  const probe = ctx.health.of(name);
  if (answered) {
    const changed = !probe.healthy || probe.probeFailed !== undefined;
    probe.healthy = true;
    probe.probeFailed = undefined;
    return changed;
  }
  if (!probe.healthy) return false;
  // It was up and stopped answering: Failed (Unhealthy), asked again every 10 s.
  probe.healthy = false;
  probe.probeFailed = 'code-server stopped answering /healthz';
  return true;
}

export async function observeRunning(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus, port: number,
): Promise<ReconcileResult> {
  const name = record.name;
  const { workload, health } = ctx.deps;
  const ref = ctx.table.editorOf(name)!;
  const probe = ctx.health.of(name);
  const crashes = ctx.crashes.of(name);
  if (!sameRef(status.runtimeRef, ref)) {
    status.runtimeRef = ref;
    status.startTime ??= new Date().toISOString();
  }
  // An editor adopted without a port of its own answers on the one status recorded.
  if (ctx.table.endpointOf(name) === undefined) ctx.table.setEndpoint(name, workload.adopt(name, ref, port)?.endpoint);
  const endpoint = ctx.table.endpointOf(name);
  const seen = workload.state(name, ref);
  const problem = noticeProblem(ctx, name, probe, status, seen.state === 'starting' || seen.state === 'running' ? seen.problem : undefined);
  if (problem) {
    Object.assign(status, { phase: (problem.whileRunning || probe.probeFailed ? 'Failed' : 'Starting') as Phase, reason: problem.reason, message: problem.message });
    await ctx.commit(record, uid, status);
    // The runtime says when it goes (onChange); a probe that gave up is retried meanwhile, as for Unhealthy.
    return probe.probeFailed ? { requeueAfterMs: UNHEALTHY_RECHECK_MS } : undefined;
  }
  // Adopted Running at a restart: asked once, now, so one that answers stays Running (not
  // Starting until a background probe comes back, for every running editor of the fleet).
  if (probe.adopted) {
    probe.adopted = undefined;
    if (!probe.healthy && status.phase === 'Running' && endpoint && (await health.health(endpoint, ADOPTED_PROBE_MS)).ok) recordHealth(ctx, name, true);
  }
  // It answers after all (a slow first start): recover without anyone asking.
  if (probe.probeFailed && endpoint && (await health.health(endpoint)).ok) recordHealth(ctx, name, true);
  if (probe.healthy) {
    if (status.phase !== 'Running') ctx.deps.logs.event(name, 'INFO', `started: code-server answers on port ${port}`);
    Object.assign(status, { phase: 'Running' as Phase, reason: undefined, message: undefined });
    const stableFor = Date.now() - Date.parse(status.startTime ?? '');
    if (crashes.crashTimes.length > 0 && stableFor >= STABLE_AFTER_MS) crashes.crashTimes = [];
  } else if (probe.probeFailed) {
    Object.assign(status, { phase: 'Failed' as Phase, reason: 'Unhealthy', message: probe.probeFailed });
    await ctx.commit(record, uid, status);
    return { requeueAfterMs: UNHEALTHY_RECHECK_MS };
  } else {
    Object.assign(status, { phase: 'Starting' as Phase, reason: undefined, message: undefined });
    if (!probe.probe && endpoint) startProbe(ctx, name, endpoint);
  }
  await ctx.commit(record, uid, status);
  if (crashes.crashTimes.length > 0) return { requeueAfterMs: STABLE_AFTER_MS };
}

/**
 * Follows the problem the runtime reports for the live editor: said once in the server's events
 * when it comes or changes, and when it goes. An editor that was Running when it came has stopped
 * serving: once the problem goes it is Starting again until /healthz answers (a fresh probe).
 */
function noticeProblem(
  ctx: Pick<ReconcileContext, 'deps'>, name: string, probe: ProbeState, status: EditorServerStatus, problem: EditorProblem | undefined,
): ProbeState['problem'] {
  const before = probe.problem;
  if (!problem) {
    if (before) {
      ctx.deps.logs.event(name, 'INFO', `${before.reason} is over: waiting for code-server to answer /healthz`);
      probe.problem = undefined;
      probe.healthy = false;
      probe.probeFailed = undefined;
    }
    return undefined;
  }
  if (before?.reason === problem.reason && before.message === problem.message) return before;
  ctx.deps.logs.event(name, 'WARN', `${problem.reason}: ${problem.message}`);
  const whileRunning = before?.whileRunning ?? (probe.healthy && status.phase === 'Running');
  probe.problem = { reason: problem.reason, message: problem.message, whileRunning };
  return probe.problem;
}

/** Polls /healthz in the background and puts the name back on the queue when it answers. */
export function startProbe(ctx: Pick<ReconcileContext, 'deps' | 'table' | 'health'>, name: string, endpoint: EditorEndpoint): void {
  const token = Symbol(name);
  const probe = ctx.health.of(name);
  probe.probe = token;
  const ref = ctx.table.editorOf(name);
  const { workload, health } = ctx.deps;
  const timeoutMs = ctx.deps.config.editor.readyTimeoutSeconds * 1000;
  void health.waitReady(endpoint, Date.now() + timeoutMs, () => probe.probe !== token || ctx.table.editorOf(name) !== ref).then((ok) => {
    if (probe.probe !== token) return;
    probe.probe = undefined;
    if (ok) probe.healthy = true;
    else if (ctx.table.editorOf(name) === ref && ref && isRunning(workload.state(name, ref).state)) {
      probe.probeFailed = `code-server did not answer /healthz on port ${endpoint.port} within ${timeoutMs / 1000} s`;
      ctx.deps.logs.event(name, 'ERROR', probe.probeFailed);
    }
    ctx.deps.enqueue(name);
  });
}
