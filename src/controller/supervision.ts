// Process supervision: launching an editor, stopping it, and what happens when it dies on its
// own (spec.restartPolicy, with backoff and crash-loop detection), or when the platform has not
// placed it anywhere yet (a Pod the scheduler cannot fit: Pending, asked again with backoff).
import { backoffMs } from '../core/backoff.ts';
import { effectiveResources } from '../manifests/resources.ts';
import type { EditorServerStatus, Phase } from '../manifests/types.ts';
import { EditorNotPlaced, isRunning, type StartedEditor, type StorageUnavailable } from '../runtime/interface.ts';
import { forgetEditor, type Live, type ServerRecord } from './cache.ts';
import type { ReconcileContext } from './context.ts';
import { startProbe } from './ensure-health.ts';
import type { ReconcileResult } from './queue.ts';
import { clearProcess } from './status-commit.ts';

const CRASH_WINDOW_MS = 10 * 60_000;
/** A start the platform has not placed is asked again after 1 s, 2 s … up to this (the runtime's news of the Pod wakes it sooner). */
const NOT_PLACED_MAX_BACKOFF_MS = 30_000;

export async function startProcess(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus, live: Live, port: number,
): Promise<ReconcileResult> {
  const { deps } = ctx;
  const name = record.name;
  if (!(await deps.runtime.portIsFree(port))) {
    // Someone else took the port. One we chose ourselves moves; one the spec names cannot.
    const moved = record.server?.spec.port === undefined ? await deps.ports.reallocate(name) : undefined;
    if (moved === undefined) {
      const message = `port ${port} is held by a process this service does not manage: stop it, or set another spec.port`;
      // Retried every 5 s, as the program may go; said once, not at every retry.
      if (record.server?.status?.message !== message) deps.logs.event(name, 'ERROR', message);
      await ctx.commit(record, uid, { ...clearProcess(status), phase: 'Failed', reason: 'PortInUse', message });
      return { requeueAfterMs: 5000 };
    }
    deps.logs.event(name, 'WARN', `port ${port} is held by a process this service does not manage: moving to port ${moved}`);
    port = moved;
    status.port = moved;
  }
  // The port is on disk before the process exists, so a crash here never loses it.
  if (record.server?.status?.port !== port) {
    if ((await ctx.commit(record, uid, { ...status, phase: 'Starting' })) === 'gone') return;
  }
  // Asking again for a start the platform has not placed yet is not a new start.
  if (!live.notPlaced) deps.logs.event(name, 'INFO', `starting code-server on port ${port}`);
  let launched: StartedEditor;
  try {
    // The manifest's resources over the config's, read now: an edit of either applies at this start.
    const resources = effectiveResources(deps.config.runtime.kubernetes.resources, record.server?.spec.resources);
    launched = await deps.runtime.start({ name, port, uid, ...(resources ? { resources } : {}) });
  } catch (error) {
    if (error instanceof EditorNotPlaced) return notPlaced(ctx, record, uid, status, live, error);
    const message = `could not launch the editor: ${(error as Error).message}`;
    deps.logs.event(name, 'ERROR', message);
    await ctx.commit(record, uid, { ...clearProcess(status), phase: 'Failed', reason: 'LaunchFailed', message });
    throw error;
  }
  if (live.notPlaced) deps.logs.event(name, 'INFO', 'placed: the editor is starting');
  live.notPlaced = undefined;
  live.ref = launched.ref;
  live.endpoint = launched.endpoint;
  live.healthy = false;
  live.lastExit = undefined;
  live.probeFailed = undefined;
  live.nextRestartAt = undefined;
  // Probe while the status is written: the editor does not wait for our disk.
  startProbe(ctx, name, live, launched.endpoint);
  Object.assign(status, {
    phase: 'Starting' as Phase,
    reason: undefined,
    message: undefined,
    runtimeRef: launched.ref,
    startTime: new Date().toISOString(),
  });
  await ctx.commit(record, uid, status);
}

/**
 * The platform took the start but has not placed the editor (a Pod Pending as Unschedulable):
 * the server is Pending with the platform's reason and words, said once in its events (not at
 * every try), and the start is asked again with backoff. No editor is recorded, so nothing counts
 * as a crash; the request stands in the platform, and a stop finds it through list().
 */
async function notPlaced(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus, live: Live, error: EditorNotPlaced,
): Promise<ReconcileResult> {
  const { reason, message } = error.problem;
  const attempts = (live.notPlaced?.attempts ?? 0) + 1;
  live.notPlaced = { attempts };
  const before = record.server?.status;
  if (before?.phase !== 'Pending' || before.reason !== reason || before.message !== message) {
    ctx.deps.logs.event(record.name, 'WARN', `not started yet: ${reason}: ${message}`);
  }
  await ctx.commit(record, uid, { ...clearProcess(status), phase: 'Pending', reason, message });
  return { requeueAfterMs: backoffMs(attempts, { initialMs: 1000, maxMs: NOT_PLACED_MAX_BACKOFF_MS }) };
}

/**
 * The server's storage cannot be reached while no editor runs (StorageUnavailable: on a cluster,
 * the Pod that mounts its volume cannot run, say its image cannot be pulled): Pending with the
 * platform's reason and words, said once, asked again with the backoff of a start not placed.
 * Thrown on when an editor runs: its storage is reached through it, so this is something else.
 */
export async function storageUnavailable(ctx: ReconcileContext, name: string, error: StorageUnavailable): Promise<ReconcileResult> {
  const record = ctx.cache.records.get(name);
  const uid = record?.server?.metadata.uid;
  const live = ctx.cache.live(name);
  if (!record?.server || !uid || live.ref) throw error;
  const { reason, message } = error.problem;
  live.storageTries = (live.storageTries ?? 0) + 1;
  const before = record.server.status;
  if (before?.phase !== 'Pending' || before.reason !== reason || before.message !== message) {
    ctx.deps.logs.event(name, 'WARN', `its storage cannot be reached yet: ${reason}: ${message}`);
  }
  await ctx.commit(record, uid, { ...clearProcess(structuredClone(before ?? { phase: 'Pending' })), phase: 'Pending', reason, message });
  return { requeueAfterMs: backoffMs(live.storageTries, { initialMs: 1000, maxMs: NOT_PLACED_MAX_BACKOFF_MS }) };
}

/** Withdraws a start the platform has not placed (it stands there, without a reference here). */
export async function withdrawStart(ctx: ReconcileContext, name: string): Promise<void> {
  await stopEditorsOf(ctx, name);
  ctx.cache.live(name).notPlaced = undefined;
  ctx.deps.logs.event(name, 'INFO', 'the start that was not placed yet is withdrawn');
}

export async function stopProcess(ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus, why: string): Promise<void> {
  const { deps } = ctx;
  const name = record.name;
  const live = ctx.cache.live(name);
  const ref = live.ref!;
  deps.logs.event(name, 'INFO', 'stopping');
  await ctx.commit(record, uid, { ...status, phase: 'Stopping' });
  live.probe = undefined;
  await deps.runtime.stop(name, ref, deps.config.editor.stopGraceSeconds * 1000);
  forgetEditor(live);
  clearProcess(status);
  deps.logs.event(name, 'INFO', why);
}

/**
 * Stops the editor this controller runs for the server, and any other the runtime runs for it
 * (one left running while its manifest was invalid). A reference in status plays no part.
 */
export async function stopEditorsOf(ctx: ReconcileContext, name: string): Promise<void> {
  const { runtime, config } = ctx.deps;
  const graceMs = config.editor.stopGraceSeconds * 1000;
  const live = ctx.cache.lives.get(name);
  if (live?.ref) await runtime.stop(name, live.ref, graceMs);
  for (const found of await runtime.list()) {
    if (found.name === name) await runtime.stop(name, found.ref, graceMs);
  }
  if (live) forgetEditor(live);
}

/**
 * Handles an editor that died on its own: records the exit and applies spec.restartPolicy.
 * Returns the delay before the next start, or undefined when it is not to be restarted.
 */
export function recordCrash(ctx: ReconcileContext, name: string, status: EditorServerStatus, live: Live): number | undefined {
  const { deps } = ctx;
  const policy = ctx.cache.records.get(name)?.server?.spec.restartPolicy ?? 'Never';
  const exit = live.lastExit ?? { code: null, signal: null };
  live.lastExit = undefined;
  const how = exit.signal ? `killed by ${exit.signal}` : exit.code !== null ? `exited with code ${exit.code}` : 'exited';
  const clean = exit.code === 0;
  status.lastExit = { code: exit.code, signal: exit.signal, at: new Date().toISOString() };
  clearProcess(status);
  const restart = policy === 'Always' || (policy === 'OnFailure' && !clean);
  deps.logs.event(name, clean ? 'WARN' : 'ERROR', `code-server ${how}${restart ? '' : ` (restartPolicy ${policy}: not restarting)`}`);
  if (!restart) {
    Object.assign(status, { phase: 'Failed' as Phase, reason: clean ? 'Exited' : 'Crashed', message: `code-server ${how}` });
    return undefined;
  }
  const now = Date.now();
  live.crashTimes = [...live.crashTimes.filter((t) => now - t < CRASH_WINDOW_MS), now];
  const attempts = live.crashTimes.length;
  const delay = backoffMs(attempts, { initialMs: 1000, maxMs: deps.config.editor.maxRestartBackoffSeconds * 1000 });
  live.nextRestartAt = now + delay;
  status.restarts = (status.restarts ?? 0) + 1;
  if (attempts >= deps.config.editor.crashLoopRestarts) {
    Object.assign(status, {
      phase: 'Failed' as Phase,
      reason: 'CrashLoopBackOff',
      message: `code-server ${how}; ${attempts} crashes in ${CRASH_WINDOW_MS / 60_000} min, next start in ${Math.round(delay / 1000)} s`,
    });
  } else {
    Object.assign(status, { phase: 'Starting' as Phase, reason: 'BackOff', message: `code-server ${how}; restarting in ${Math.round(delay / 1000)} s` });
  }
  deps.logs.event(name, 'INFO', `restarting in ${Math.round(delay / 1000)} s (restartPolicy ${policy})`);
  return delay;
}

/**
 * Stops the server's running editor because the service is shutting down, and records it
 * Stopped (ServiceShutdown) with no editor. spec.running stays as it is: the next start of the
 * service starts again what the manifest asks for. Call only once the queue is idle.
 */
export async function stopForShutdown(ctx: ReconcileContext, name: string): Promise<void> {
  const { deps } = ctx;
  const record = ctx.cache.records.get(name);
  const server = record?.server;
  const live = ctx.cache.lives.get(name);
  const ref = live?.ref;
  if (!record || !server?.status || !live || !ref || !isRunning(deps.runtime.state(name, ref).state)) return;
  deps.logs.event(name, 'INFO', 'stopping: the service is shutting down');
  live.probe = undefined;
  await deps.runtime.stop(name, ref, deps.config.editor.stopGraceSeconds * 1000);
  forgetEditor(live);
  const status = clearProcess(structuredClone(server.status));
  Object.assign(status, {
    phase: 'Stopped' as Phase,
    reason: 'ServiceShutdown',
    message: 'stopped because the service shut down; the next start of the service acts on spec.running again',
  });
  // Every record's uid is given when its manifest is first read (prime or reconcile).
  await ctx.commit(record, server.metadata.uid!, status);
  deps.logs.event(name, 'INFO', 'stopped: the service shut down');
}
