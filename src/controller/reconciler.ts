// reconcile(name): read the manifest and the real editor, make one step of progress toward the
// spec, and write status back when it changed. Level-triggered and idempotent. This is the one
// thing the Reconciler does: each step lives in its own file (ensure-*.ts, supervision.ts,
// absence.ts) with the memory it keeps (context.ts names the parts), what readers ask is answered
// by the index (src/index/), and what they may ask to be done is in commands.ts. Once the
// editor's state is known, what to do is decided by decide() in decide.ts, a pure function of
// what was observed, and carried out here (#act).
import type { ServerRecord } from '../index/records.ts';
import { displayNameOf, RESTARTED_AT, type EditorServer, type EditorServerStatus, type Phase } from '../manifests/types.ts';
import { StorageUnavailable } from '../runtime/interface.ts';
import { deleteServer, markInvalid, whileMissing } from './absence.ts';
import type { ReconcileContext } from './context.ts';
import { decide, type Action } from './decide.ts';
import { activePlan, ensureDevcontainer, unmetRequirements } from './ensure-devcontainer.ts';
import { ensureExtensions } from './ensure-extensions.ts';
import { clearIdleStop, ensureIdle, holdIdleStop } from './ensure-idle.ts';
import { observeRunning } from './ensure-health.ts';
import { ensureIdentity } from './ensure-identity.ts';
import { ensurePort } from './ensure-port.ts';
import { ensureRestored } from './ensure-restored.ts';
import { ensureCapacity, stopForCapacity } from './ensure-capacity.ts';
import { distrustForeignRef, observeProcess } from './ensure-process.ts';
import { ensureSettings } from './ensure-settings.ts';
import { ensureWorkspaceOnce, ensureWorkspaceSource } from './ensure-workspace.ts';
import { TerminalError, type ReconcileResult } from './queue.ts';
import { clearProcess } from './status-commit.ts';
import { recordCrash, startProcess, stopProcess, storageUnavailable, withdrawStart } from './supervision.ts';

export class Reconciler {
  readonly #ctx: ReconcileContext;
  /** The spec (and restart request) a terminal error was recorded for, by name: not acted on again until it changes. */
  readonly #terminal = new Map<string, string>();

  constructor(ctx: ReconcileContext) {
    this.#ctx = ctx;
  }

  async reconcile(name: string): Promise<ReconcileResult> {
    const ctx = this.#ctx;
    try {
      const result = await this.#reconcile(name);
      const placement = ctx.placement.peek(name);
      if (placement) placement.storageTries = undefined;
      return result;
    } catch (error) {
      if (error instanceof StorageUnavailable) return storageUnavailable(ctx, name, error);
      throw error;
    } finally {
      if (!ctx.table.records.has(name)) this.#terminal.delete(name);
    }
  }

  async #reconcile(name: string): Promise<ReconcileResult> {
    const ctx = this.#ctx;
    const { deps, table } = ctx;
    const read = await deps.store.read(name);
    if (read.kind === 'missing') return whileMissing(ctx, name);
    const presence = ctx.presence.of(name);
    presence.seenIn = (await deps.store.folderIdentity()) ?? presence.seenIn;
    presence.missingSince = undefined;
    if (read.kind === 'invalid') {
      if (ctx.presence.deletions.has(name)) return deleteServer(ctx, name);
      return markInvalid(ctx, name, read.errors);
    }

    const server = read.server;
    const { uid, warning } = ensureIdentity(ctx.identities, deps.layout, name, server);
    const before = table.records.get(name)?.server;
    const record = table.setRecord({ name, server });
    // A manifest edit that changes no status (a display name, a label) is news too; a server
    // seen for the first time is told with its first status commit (its port, its workspace).
    if (before === undefined) ctx.unannounced.add(name);
    else if (!sameManifest(before, server)) table.changed(name);
    // In the same tick as the record is shown: no answer names a process the service did not launch.
    if (server.status?.runtimeRef && !table.editorOf(name)) distrustForeignRef(ctx, name, server.status);
    if (record.absence !== undefined) {
      record.absence = undefined;
      table.changed(name);
    }
    const displayName = displayNameOf(server);
    deps.logs.track({ name, id: uid, displayName });
    if (server.metadata.deletionTimestamp || ctx.presence.deletions.has(name)) return deleteServer(ctx, name);

    if (warning) ctx.warn(name, warning);
    if (!server.status) deps.logs.event(name, 'INFO', `created "${displayName}"`);
    // observedGeneration is set when status settles (commitStatus), not here before any work.
    const status: EditorServerStatus = structuredClone(server.status ?? { phase: 'Pending' });

    // A terminal problem recorded for this very spec: nothing to do until the spec changes.
    const specKey = JSON.stringify([server.spec, server.metadata.annotations?.[RESTARTED_AT]]);
    if (this.#terminal.get(name) === specKey) return;
    this.#terminal.delete(name);

    const port = await ensurePort(deps, name, server);
    if (typeof port !== 'number') {
      await ctx.commit(record, uid, { ...status, phase: 'Failed', reason: 'PortUnavailable', message: port.problem });
      if (!port.terminal) return { requeueAfterMs: 5000 };
      this.#terminal.set(name, specKey);
      throw new TerminalError('PortUnavailable', port.problem);
    }
    status.port = port;
    // A restore under way holds the server before its folders, settings and editor are touched.
    const restored = await ensureRestored(ctx, record, uid, status);
    if (restored !== 'ready') return restored === 'gone' ? undefined : restored;
    status.workspacePath = await ensureWorkspaceOnce(ctx, name);
    const source = await ensureWorkspaceSource(ctx, record, uid, status).catch((error) => {
      if (error instanceof TerminalError) this.#terminal.set(name, specKey);
      throw error;
    });
    if (source !== 'ready') return source === 'gone' ? undefined : source;
    // devcontainer.json, read once content arrived (before a start it is read again, below).
    const { restart: restartForPlan } = await ensureDevcontainer(ctx, record, status, false);
    await ensureSettings(ctx, name, server.spec, true);
    const { alive, wait } = await observeProcess(ctx, name, status, port);
    if (wait) return wait;

    // What was observed, as plain data; decide() says what to do (the table is in decide.ts).
    const now = Date.now();
    const crashes = ctx.crashes.of(name);
    const action = decide({
      wantRunning: server.spec.running,
      restartAt: server.metadata.annotations?.[RESTARTED_AT],
      restartHonoured: status.observedRestartedAt,
      alive,
      port,
      editorPort: table.endpointOf(name)?.port ?? server.status?.port,
      evictedFor: deps.capacity?.evictionOf(name),
      idleStop: !status.idleStoppedAt ? 'none' : ctx.idle.of(name).wakeRequested ? 'woken' : 'holding',
      recordedRunning: Boolean(status.runtimeRef),
      phase: status.phase,
      reason: status.reason,
      nextRestartAt: crashes.nextRestartAt,
      now,
    });
    // The workspace's content came after its editor started (a cluster fills the volume through
    // the running Pod) and its devcontainer.json asks for another image, resources or environment.
    if (action.kind === 'supervise' && restartForPlan) {
      await stopProcess(ctx, record, uid, status, 'stopped to start again as the workspace\'s devcontainer.json asks (image, resources, environment)');
      return this.#act({ kind: 'start', wake: false }, record, uid, status, port, now);
    }
    return this.#act(action, record, uid, status, port, now);
  }

  /** Does what decide() said, with the steps each action takes. */
  async #act(action: Action, record: ServerRecord, uid: string, status: EditorServerStatus, port: number, now: number): Promise<ReconcileResult> {
    const ctx = this.#ctx;
    const { deps } = ctx;
    const name = record.name;
    switch (action.kind) {
      case 'stop': {
        if (action.stopEditor) await stopProcess(ctx, record, uid, status, 'stopped on request');
        // A start the platform has not placed yet still stands there: withdrawn through list().
        else if (ctx.placement.peek(name)?.notPlaced) await withdrawStart(ctx, name);
        clearIdleStop(ctx, name, status);
        ctx.crashes.reset(name);
        if (action.honourRestart !== undefined) status.observedRestartedAt = action.honourRestart;
        const extensions = await ensureExtensions(ctx, record, uid, status);
        if (extensions !== 'ready') return extensions === 'gone' ? undefined : extensions;
        Object.assign(clearProcess(status), { phase: 'Stopped' as Phase, reason: undefined, message: undefined });
        await ctx.commit(record, uid, status);
        return;
      }
      case 'restart':
        if (action.stopEditor) await stopProcess(ctx, record, uid, status, 'stopped for a restart');
        clearIdleStop(ctx, name, status);
        status.observedRestartedAt = action.honourRestart;
        status.restarts = (status.restarts ?? 0) + 1;
        // A restart is also the way to retry extensions that failed to install.
        status.extensions = status.extensions?.filter((e) => e.state !== 'Failed');
        ctx.crashes.reset(name);
        ctx.crashes.of(name).lastExit = undefined;
        deps.logs.event(name, 'INFO', 'restarting');
        break; // to the start
      case 'move':
        await stopProcess(ctx, record, uid, status, `stopped to move from port ${action.from} to ${action.to}`);
        break; // to the start, on the new port
      case 'evict':
        // The least recently active idle editor, and another start needs its room (whenFull stopIdlest).
        return stopForCapacity(ctx, record, uid, status, action.for);
      case 'supervise': {
        // Settings asked for are applied at once (above); none asked for, where an editor reads them: before it starts, and while it runs.
        await ensureSettings(ctx, name, record.server!.spec);
        // Extensions follow the spec while the editor runs too: installs never hold its health
        // checks, and neither does a failure to look at them (on a cluster that is an exec through
        // the node's kubelet, which may be the very thing that is down).
        const extensions = await ensureExtensions(ctx, record, uid, status, 'running').catch((error: unknown) => error as Error);
        if (extensions instanceof Error) ctx.log(`the extensions of ${name} were not looked at: ${extensions.message}`);
        return ensureIdle(ctx, record, uid, status, await observeRunning(ctx, record, uid, status, port));
      }
      default:
        // The editor does not run. holdIdleStop settles the idle stop as decide() read it: it
        // records the hold (hold idle-stop: stopped for idleness, it starts again when woken),
        // lifts a woken one (wake), or else forgets a stale wake request.
        await holdIdleStop(ctx, record, uid, status);
        if (action.kind === 'hold') return; // failed or stopped for capacity: until someone starts it again
        if (action.kind === 'record-crash') {
          // We believed it was running and it is gone: it exited or crashed.
          const ended = status.runtimeRef;
          const delay = recordCrash(ctx, name, status);
          await ctx.commit(record, uid, status);
          if (delay !== undefined) return { requeueAfterMs: delay };
          // Not started again: nothing the platform brings back in its place may run either (a
          // StatefulSet makes a deleted Pod again). A process that ended is not signalled.
          if (ended) await deps.workload.stop(name, ended, deps.config.editor.stopGraceSeconds * 1000).catch((error: Error) => ctx.log(`stopping what is left of ${name}'s editor: ${error.message}`));
          return;
        }
        if (action.kind === 'wait') return { requeueAfterMs: action.untilMs - now };
    }

    // devcontainer.json as it is now (a person may have edited it), and what it requires of the host.
    await ensureDevcontainer(ctx, record, status, true);
    const unmet = await unmetRequirements(ctx, activePlan(ctx, name));
    if (unmet) {
      if (status.reason !== 'HostRequirementsUnmet' || status.message !== unmet) deps.logs.event(name, 'WARN', unmet);
      await ctx.commit(record, uid, { ...clearProcess(status), phase: 'Failed', reason: 'HostRequirementsUnmet', message: unmet });
      return;
    }
    await ensureSettings(ctx, name, record.server!.spec);
    const extensions = await ensureExtensions(ctx, record, uid, status);
    if (extensions !== 'ready') return extensions === 'gone' ? undefined : extensions;
    const room = await ensureCapacity(ctx, record, uid, status);
    if (room !== 'admitted') return room;
    // Launched (it counts as running now) or given up: its held slot is not needed any more.
    return startProcess(ctx, record, uid, status, port).finally(() => deps.capacity?.release(name));
  }
}

/** The same manifest apart from status (status changes are told by their commit). */
function sameManifest(a: EditorServer, b: EditorServer): boolean {
  return JSON.stringify(a.metadata) === JSON.stringify(b.metadata) && JSON.stringify(a.spec) === JSON.stringify(b.spec);
}
