// Step: idle autostop. A running editor nobody has used for its idle timeout (spec.idleTimeoutSeconds,
// else the config's editor.idleTimeoutSeconds; 0: never) is stopped, and stays stopped, though
// spec.running stays true, until it is woken: an API start, or its editor opened through the proxy.
import type { Config } from '../config/settings.ts';
import type { EditorServerSpec, EditorServerStatus, Phase, WakeState } from '../manifests/types.ts';
import type { Live, ServerRecord } from './cache.ts';
import type { ReconcileContext } from './context.ts';
import type { ReconcileResult } from './queue.ts';
import { clearProcess } from './status-commit.ts';
import { stopProcess } from './supervision.ts';

export const IDLE_TIMEOUT = 'IdleTimeout';

/** The idle timeout in force for a server, in seconds; 0: never stopped for idleness. */
export function idleTimeoutSeconds(spec: EditorServerSpec, config: Config): number {
  return spec.idleTimeoutSeconds ?? config.editor.idleTimeoutSeconds;
}

/**
 * When the server was last used, ms since the epoch: the tracker's last activity, and the
 * editor's start (a just-started editor is not idle). An editor adopted from an earlier run of
 * the service, of which nothing is known, counts from now.
 */
function lastUsed(ctx: ReconcileContext, name: string, status: EditorServerStatus): number {
  const activity = ctx.deps.activity!;
  if (activity.lastActivity(name) === undefined) activity.touch(name);
  const started = Date.parse(status.startTime ?? '');
  return Math.max(activity.lastActivity(name)!, Number.isFinite(started) ? started : 0);
}

/**
 * Run once the editor is Running: stops it when its idle timeout has passed, else asks the
 * queue to look again when it would pass (the earlier of that and `result`'s own requeue).
 */
export async function ensureIdle(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus, live: Live, result: ReconcileResult,
): Promise<ReconcileResult> {
  const { deps } = ctx;
  const timeoutMs = idleTimeoutSeconds(record.server!.spec, deps.config) * 1000;
  if (!deps.activity || timeoutMs <= 0 || status.phase !== 'Running' || !live.ref) return result;
  const name = record.name;
  if (Date.now() - lastUsed(ctx, name, status) >= timeoutMs) {
    // The background read of heartbeats lags by its interval: code-server's word, fresh, decides.
    const health = live.endpoint ? await deps.runtime.health(live.endpoint, 2000) : { ok: false };
    if (health.lastHeartbeat !== undefined) deps.activity.touch(name, health.lastHeartbeat);
    // No answer (a busy machine, a slow editor): not a reason to stop it; ask once more in a second.
    if (!health.ok && !live.idleReadMissed) {
      live.idleReadMissed = true;
      return { ...result, requeueAfterMs: Math.min(result?.requeueAfterMs ?? 1000, 1000) };
    }
  }
  live.idleReadMissed = false;
  const idleMs = Date.now() - lastUsed(ctx, name, status);
  if (idleMs < timeoutMs) {
    const dueMs = timeoutMs - idleMs;
    return { ...result, requeueAfterMs: Math.min(result?.requeueAfterMs ?? dueMs, dueMs) };
  }

  const port = status.port;
  const message = `stopped after ${duration(idleMs)} without activity (idle timeout ${duration(timeoutMs)}): `
    + `open /vscode/${port}/ or POST /servers/${uid}/start to start it again`;
  Object.assign(status, { reason: IDLE_TIMEOUT, message, idleStoppedAt: new Date().toISOString() });
  ctx.log(`server ${name}: idle for ${duration(idleMs)} (idle timeout ${duration(timeoutMs)}): stopping it`);
  live.waking = false;
  // The same stop as an API stop: the process group this service launched, SIGTERM, grace, SIGKILL.
  await stopProcess(ctx, record, uid, status, `stopped: no activity for ${duration(idleMs)} (idle timeout ${duration(timeoutMs)})`);
  Object.assign(status, { phase: 'Stopped' as Phase, reason: IDLE_TIMEOUT, message });
  live.crashTimes = [];
  live.nextRestartAt = undefined;
  await ctx.commit(record, uid, status);
}

/**
 * Run for a server whose spec says running and whose editor does not run: true while an idle
 * stop holds it (status says Stopped, IdleTimeout); false when there is none, or when it was
 * woken, which lifts it, so the server starts as usual.
 */
export async function holdIdleStop(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus, live: Live,
): Promise<boolean> {
  if (!status.idleStoppedAt) {
    live.wakeRequested = false;
    return false;
  }
  if (live.wakeRequested) {
    live.wakeRequested = false;
    live.waking = true;
    delete status.idleStoppedAt;
    Object.assign(status, { reason: undefined, message: undefined });
    ctx.deps.logs.event(record.name, 'INFO', 'woken after an idle stop: starting');
    return false;
  }
  Object.assign(clearProcess(status), { phase: 'Stopped' as Phase });
  await ctx.commit(record, uid, status);
  return true;
}

/** Forgets an idle stop: the server was stopped, deleted or restarted on purpose. */
export function clearIdleStop(status: EditorServerStatus, live: Live): void {
  delete status.idleStoppedAt;
  live.wakeRequested = false;
  live.waking = false;
}

/**
 * Asks an idle-stopped server to start again (its editor was opened, or started through the
 * API). False, and nothing done, for any other server: one stopped on purpose stays stopped.
 */
export function wake(ctx: ReconcileContext, name: string, why: string): boolean {
  const server = ctx.cache.records.get(name)?.server;
  if (!server?.spec.running || server.metadata.deletionTimestamp || !server.status?.idleStoppedAt) return false;
  const live = ctx.cache.live(name);
  if (!live.wakeRequested) {
    ctx.log(`server ${name}: woken (${why})`);
    // Being opened is activity: the editor is not idle the moment it is up.
    ctx.deps.activity?.touch(name);
  }
  live.wakeRequested = true;
  live.waking = true;
  ctx.deps.enqueue(name);
  return true;
}

/**
 * `starting`: still held by its idle stop, or woken and not answering yet; `refused`: its start
 * waits for capacity; `failed`: its start failed. Undefined once it runs (the proxy routes to
 * it) or when it was not woken.
 */
export function wakeState(ctx: ReconcileContext, name: string): WakeState | undefined {
  const server = ctx.cache.records.get(name)?.server;
  const live = ctx.cache.lives.get(name);
  if (!server?.spec.running || server.metadata.deletionTimestamp) {
    if (live) live.waking = false;
    return undefined;
  }
  const status = server.status;
  if (status?.idleStoppedAt) return { state: 'starting' };
  if (!live?.waking) return undefined;
  if (status?.phase === 'Running') {
    live.waking = false;
    return undefined;
  }
  const message = status?.message ?? 'see GET /servers/{id}/logs';
  if (status?.phase === 'Failed') return { state: 'failed', message };
  if (status?.reason === 'CapacityExceeded') return { state: 'refused', message };
  return { state: 'starting' };
}

/** "45 s", "3 min", "2 h 5 min". */
function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  const min = Math.round(s / 60);
  return min < 120 ? `${min} min` : `${Math.floor(min / 60)} h${min % 60 ? ` ${min % 60} min` : ''}`;
}
