// Process supervision: launching an editor, stopping it, and what happens when it dies on its
// own (spec.restartPolicy, with backoff and crash-loop detection), or when the platform has not
// placed it anywhere yet (a Pod the scheduler cannot fit: Pending, asked again with backoff).
import { backoffMs } from '../core/backoff.ts';
import type { EditorServerStatus, Phase } from '../manifests/types.ts';
import type { ServerRecord } from '../index/records.ts';
import { EditorNotPlaced, isRunning, type ExitInfo, type StartedEditor, type StorageUnavailable } from '../runtime/interface.ts';
import type { ReconcileContext } from './context.ts';
import { activePlan, planEnv, planResources, startKey } from './ensure-devcontainer.ts';
import { startProbe } from './ensure-health.ts';
import { PerServer } from './per-server.ts';
import type { ReconcileResult } from './queue.ts';
import { clearProcess } from './status-commit.ts';

const CRASH_WINDOW_MS = 10 * 60_000;
/** A start the platform has not placed is asked again after 1 s, 2 s … up to this (the runtime's news of the Pod wakes it sooner). */
const NOT_PLACED_MAX_BACKOFF_MS = 30_000;

/** How a server's editors ended, for spec.restartPolicy's back-off and crash-loop detection. */
export interface CrashState {
  /** The exit the runtime reported for the editor that just ended. */
  lastExit?: ExitInfo;
  /** When it crashed, within the crash window. */
  crashTimes: number[];
  /** When the next start after a crash may go. */
  nextRestartAt?: number;
  /** When the editor was first seen dead with its exit not yet reported. */
  exitWaitSince?: number;
}

export class CrashHistory extends PerServer<CrashState> {
  constructor() {
    super(() => ({ crashTimes: [] }));
  }

  /** Forgets earlier crashes: the server was stopped, restarted or stopped for idleness on purpose. */
  reset(name: string): void {
    const crashes = this.peek(name);
    if (crashes) Object.assign(crashes, { crashTimes: [], nextRestartAt: undefined });
  }
}

/** Where a start or the server's storage stands with a platform that places work (a cluster's scheduler). */
export interface PlacementState {
  /** The platform took the last start but has not placed the editor (EditorNotPlaced): how many tries so far. */
  notPlaced?: { attempts: number };
  /** Reconciles in a row that found the server's storage out of reach (StorageUnavailable). */
  storageTries?: number;
}

export class Placement extends PerServer<PlacementState> {
  constructor() {
    super(() => ({}));
  }
}

/** Forgets the editor a server had, after a stop: whatever stopped it, its facts go the same way. */
export function forgetEditor(ctx: Pick<ReconcileContext, 'table' | 'health' | 'crashes' | 'placement'>, name: string): void {
  ctx.table.clearEditor(name);
  ctx.health.reset(name);
  const crashes = ctx.crashes.peek(name);
  if (crashes) crashes.lastExit = undefined;
  const placement = ctx.placement.peek(name);
  if (placement) placement.notPlaced = undefined;
}

export async function startProcess(
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus, port: number,
): Promise<ReconcileResult> {
  const { deps } = ctx;
  const name = record.name;
  const placement = ctx.placement.of(name);
  if (deps.workload.portIsFree && !(await deps.workload.portIsFree(port))) {
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
  if (!placement.notPlaced) deps.logs.event(name, 'INFO', `starting code-server on port ${port}`);
  let launched: StartedEditor;
  try {
    // The manifest's resources over devcontainer.json's host requirements over the config's, read
    // now: an edit of any applies at this start; so do the plan's environment and image.
    const resources = planResources(ctx, record, deps.defaultResources?.());
    const env = planEnv(ctx, record, status.workspacePath ?? '');
    const image = deps.workload.runsImages ? activePlan(ctx, name)?.image : undefined;
    launched = await deps.workload.start({ name, port, uid, ...(resources ? { resources } : {}), ...(Object.keys(env).length ? { env } : {}), ...(image ? { image } : {}) });
    // What it started with of devcontainer.json: content that arrives later and asks for more starts it again.
    status.devcontainer = { ...(status.devcontainer ?? { state: 'none', message: 'not read yet: the workspace is filled once the editor runs' }) };
    status.devcontainer.startedWith = startKey(ctx, record, status.devcontainer);
  } catch (error) {
    if (error instanceof EditorNotPlaced) return notPlaced(ctx, record, uid, status, error);
    const message = `could not launch the editor: ${(error as Error).message}`;
    deps.logs.event(name, 'ERROR', message);
    await ctx.commit(record, uid, { ...clearProcess(status), phase: 'Failed', reason: 'LaunchFailed', message });
    throw error;
  }
  if (placement.notPlaced) deps.logs.event(name, 'INFO', 'placed: the editor is starting');
  placement.notPlaced = undefined;
  ctx.table.setEditor(name, launched.ref, launched.endpoint);
  const probe = ctx.health.of(name);
  probe.healthy = false;
  probe.probeFailed = undefined;
  const crashes = ctx.crashes.of(name);
  crashes.lastExit = undefined;
  crashes.nextRestartAt = undefined;
  // Probe while the status is written: the editor does not wait for our disk.
  startProbe(ctx, name, launched.endpoint);
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
  ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus, error: EditorNotPlaced,
): Promise<ReconcileResult> {
  const { reason, message } = error.problem;
  const placement = ctx.placement.of(record.name);
  const attempts = (placement.notPlaced?.attempts ?? 0) + 1;
  placement.notPlaced = { attempts };
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
  const record = ctx.table.records.get(name);
  const uid = record?.server?.metadata.uid;
  if (!record?.server || !uid || ctx.table.editorOf(name)) throw error;
  const { reason, message } = error.problem;
  const placement = ctx.placement.of(name);
  placement.storageTries = (placement.storageTries ?? 0) + 1;
  const before = record.server.status;
  if (before?.phase !== 'Pending' || before.reason !== reason || before.message !== message) {
    ctx.deps.logs.event(name, 'WARN', `its storage cannot be reached yet: ${reason}: ${message}`);
  }
  await ctx.commit(record, uid, { ...clearProcess(structuredClone(before ?? { phase: 'Pending' })), phase: 'Pending', reason, message });
  return { requeueAfterMs: backoffMs(placement.storageTries, { initialMs: 1000, maxMs: NOT_PLACED_MAX_BACKOFF_MS }) };
}

/** Withdraws a start the platform has not placed (it stands there, without a reference here). */
export async function withdrawStart(ctx: ReconcileContext, name: string): Promise<void> {
  await stopEditorsOf(ctx, name);
  ctx.placement.of(name).notPlaced = undefined;
  ctx.deps.logs.event(name, 'INFO', 'the start that was not placed yet is withdrawn');
}

export async function stopProcess(ctx: ReconcileContext, record: ServerRecord, uid: string, status: EditorServerStatus, why: string): Promise<void> {
  const { deps } = ctx;
  const name = record.name;
  const ref = ctx.table.editorOf(name)!;
  deps.logs.event(name, 'INFO', 'stopping');
  await ctx.commit(record, uid, { ...status, phase: 'Stopping' });
  ctx.health.of(name).probe = undefined;
  await deps.workload.stop(name, ref, deps.config.editor.stopGraceSeconds * 1000);
  forgetEditor(ctx, name);
  clearProcess(status);
  deps.logs.event(name, 'INFO', why);
}

/**
 * Stops the editor this controller runs for the server, and any other the runtime runs for it
 * (one left running while its manifest was invalid). A reference in status plays no part.
 */
export async function stopEditorsOf(ctx: Pick<ReconcileContext, 'deps' | 'table' | 'health' | 'crashes' | 'placement'>, name: string): Promise<void> {
  const { workload, config } = ctx.deps;
  const graceMs = config.editor.stopGraceSeconds * 1000;
  const ref = ctx.table.editorOf(name);
  if (ref) await workload.stop(name, ref, graceMs);
  for (const found of await workload.list()) {
    if (found.name === name) await workload.stop(name, found.ref, graceMs);
  }
  forgetEditor(ctx, name);
}

/**
 * Handles an editor that died on its own: records the exit and applies spec.restartPolicy.
 * Returns the delay before the next start, or undefined when it is not to be restarted.
 */
export function recordCrash(ctx: ReconcileContext, name: string, status: EditorServerStatus): number | undefined {
  const { deps } = ctx;
  const policy = ctx.table.serverNamed(name)?.spec.restartPolicy ?? 'Never';
  const crashes = ctx.crashes.of(name);
  const exit = crashes.lastExit ?? { code: null, signal: null };
  crashes.lastExit = undefined;
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
  crashes.crashTimes = [...crashes.crashTimes.filter((t) => now - t < CRASH_WINDOW_MS), now];
  const attempts = crashes.crashTimes.length;
  const delay = backoffMs(attempts, { initialMs: 1000, maxMs: deps.config.editor.maxRestartBackoffSeconds * 1000 });
  crashes.nextRestartAt = now + delay;
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
  const record = ctx.table.records.get(name);
  const server = record?.server;
  const ref = ctx.table.editorOf(name);
  if (!record || !server?.status || !ref || !isRunning(deps.workload.state(name, ref).state)) return;
  deps.logs.event(name, 'INFO', 'stopping: the service is shutting down');
  ctx.health.of(name).probe = undefined;
  await deps.workload.stop(name, ref, deps.config.editor.stopGraceSeconds * 1000);
  forgetEditor(ctx, name);
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
