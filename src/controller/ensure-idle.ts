// Step: idle autostop. A running editor nobody has used for its idle timeout (spec.idleTimeoutSeconds,
// else the config's editor.idleTimeoutSeconds; 0: never) is stopped, and stays stopped, though
// spec.running stays true, until it is woken: an API start, or its editor opened through the proxy.
import type { Config } from '../config/settings.ts';
import type { ServerRecord } from '../index/records.ts';
import type { EditorServerSpec, EditorServerStatus, Phase } from '../manifests/types.ts';
import type { ReconcileContext } from './context.ts';
import { PerServer } from './per-server.ts';
import type { ReconcileResult } from './queue.ts';
import { clearProcess } from './status-commit.ts';
import { stopProcess } from './supervision.ts';

export const IDLE_TIMEOUT = 'IdleTimeout';

/** What this step remembers of a server (whether a woken one is on its way up is the index's: the proxy reads it). */
export interface IdleState {
  /** An idle-stopped server was asked to start (API start, its editor opened): its next reconcile lifts the idle stop. */
  wakeRequested?: boolean;
}

export class IdleStops extends PerServer<IdleState> {
  constructor() {
    super(() => ({}));
  }
}

/** The idle timeout in force for a server, in seconds; 0: never stopped for idleness. */
export function idleTimeoutSeconds(spec: EditorServerSpec, config: Config): number {
  return spec.idleTimeoutSeconds ?? config.editor.idleTimeoutSeconds;
}

/**
 * When the server was last used, ms since the epoch: the tracker's last activity (what a person
 * did through the proxy: docs/idle.md), and the editor's start (a just-started editor is not
 * idle). An editor adopted from an earlier run of the service, of which nothing is known, counts
 * from now.
 */
function lastUsed(ctx: Pick<ReconcileContext, 'deps'>, name: string, status: EditorServerStatus): number {
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
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus, result: ReconcileResult,
): Promise<ReconcileResult> {
  const { deps } = ctx;
  const name = record.name;
  const timeoutMs = idleTimeoutSeconds(record.server!.spec, deps.config) * 1000;
  if (!deps.activity || timeoutMs <= 0 || status.phase !== 'Running' || !ctx.table.editorOf(name)) return result;
  const since = lastUsed(ctx, name, status);
  const idleMs = Date.now() - since;
  if (idleMs < timeoutMs) {
    const dueMs = timeoutMs - idleMs;
    return { ...result, requeueAfterMs: Math.min(result?.requeueAfterMs ?? dueMs, dueMs) };
  }

  const port = status.port;
  const why = idleReason(idleMs, since, timeoutMs);
  const message = `${why}: open /vscode/${port}/ or POST /servers/${uid}/start to start it again`;
  Object.assign(status, { reason: IDLE_TIMEOUT, message, idleStoppedAt: new Date().toISOString() });
  ctx.log(`server ${name}: ${why}: stopping it`);
  ctx.table.setWaking(name, false);
  // The same stop as an API stop: the process group this service launched, SIGTERM, grace, SIGKILL.
  await stopProcess(ctx, record, uid, status, `stopped: ${why}`);
  Object.assign(status, { phase: 'Stopped' as Phase, reason: IDLE_TIMEOUT, message });
  ctx.crashes.reset(name);
  await ctx.commit(record, uid, status);
}

/**
 * Run for a server whose spec says running and whose editor does not run: true while an idle
 * stop holds it (status says Stopped, IdleTimeout); false when there is none, or when it was
 * woken, which lifts it, so the server starts as usual.
 */
export async function holdIdleStop(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus,
): Promise<boolean> {
  const idle = ctx.idle.of(record.name);
  if (!status.idleStoppedAt) {
    idle.wakeRequested = false;
    return false;
  }
  if (idle.wakeRequested) {
    idle.wakeRequested = false;
    ctx.table.setWaking(record.name, true);
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
export function clearIdleStop(ctx: Pick<ReconcileContext, 'idle' | 'table'>, name: string, status: EditorServerStatus): void {
  delete status.idleStoppedAt;
  ctx.idle.of(name).wakeRequested = false;
  ctx.table.setWaking(name, false);
}

/**
 * Asks an idle-stopped server to start again (its editor was opened, or started through the
 * API). False, and nothing done, for any other server: one stopped on purpose stays stopped.
 */
export function wake(ctx: Pick<ReconcileContext, 'deps' | 'table' | 'idle' | 'log'>, name: string, why: string): boolean {
  const server = ctx.table.serverNamed(name);
  if (!server?.spec.running || server.metadata.deletionTimestamp || !server.status?.idleStoppedAt) return false;
  const idle = ctx.idle.of(name);
  if (!idle.wakeRequested) {
    ctx.log(`server ${name}: woken (${why})`);
    // Being opened is activity: the editor is not idle the moment it is up.
    ctx.deps.activity?.touch(name);
  }
  idle.wakeRequested = true;
  ctx.table.setWaking(name, true);
  ctx.deps.enqueue(name);
  return true;
}

/**
 * Why an editor is stopped, as its events and log say: "idle for 60 min: no input since 14:02 UTC
 * (idle timeout 60 min)". `since` is the last use, or the start when nothing reached the editor
 * after it; to the second ("14:02:07 UTC") when the timeout is under two minutes.
 */
export function idleReason(idleMs: number, since: number, timeoutMs: number): string {
  const clock = new Date(since).toISOString().slice(11, timeoutMs < 120_000 ? 19 : 16);
  return `idle for ${duration(idleMs)}: no input since ${clock} UTC (idle timeout ${duration(timeoutMs)})`;
}

/** "45 s", "3 min", "2 h 5 min". */
function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  const min = Math.round(s / 60);
  return min < 120 ? `${min} min` : `${Math.floor(min / 60)} h${min % 60 ? ` ${min % 60} min` : ''}`;
}
