// reconcile(name): read the manifest and the real process, make one step of progress toward the
// spec, and write status back when it changed. Level-triggered and idempotent. Each step lives
// in its own file (ensure-*.ts, supervision.ts, absence.ts); this file holds the flow and the
// queries the API and the proxy make. Once the editor's state is known, what to do is decided by
// decide() in decide.ts, a pure function of what was observed, and carried out here (#act).
import { EventEmitter } from 'node:events';
import { LiveServerIndex } from '../index/live-index.ts';
import type { ServerIndex } from '../index/server-index.ts';
import type { LogLevel } from '../logs/entry.ts';
import { displayNameOf, RESTARTED_AT, type EditorServer, type EditorServerStatus, type Phase, type WakeState } from '../manifests/types.ts';
import { describeRef, isRunning, StorageUnavailable, type EditorEndpoint, type RuntimeRef } from '../runtime/interface.ts';
import { deleteServer, markInvalid, teardown, whileMissing } from './absence.ts';
import { ServerCache, type Live, type ServerRecord } from './cache.ts';
import type { ReconcileContext, ReconcilerDeps } from './context.ts';
import { decide, type Action } from './decide.ts';
import { ensureExtensions } from './ensure-extensions.ts';
import { clearIdleStop, ensureIdle, holdIdleStop, wake, wakeState } from './ensure-idle.ts';
import { observeRunning, recordHealth } from './ensure-health.ts';
import { ensureIdentity, inheritedStatus } from './ensure-identity.ts';
import { ensurePort } from './ensure-port.ts';
import { ensureRestored } from './ensure-restored.ts';
import { ensureCapacity, stopForCapacity } from './ensure-capacity.ts';
import { adoptEditor, distrustForeignRef, observeProcess } from './ensure-process.ts';
import { ensureSettings } from './ensure-settings.ts';
import { ensureWorkspaceOnce, ensureWorkspaceSource } from './ensure-workspace.ts';
import { ServerEvents } from './events.ts';
import { ServerIdentities } from './identity.ts';
import { Operations } from './operations.ts';
import type { PortAllocator } from './ports.ts';
import { TerminalError, type ReconcileResult } from './queue.ts';
import { clearProcess, commitStatus } from './status-commit.ts';
import { recordCrash, startProcess, stopForShutdown, stopProcess, storageUnavailable, withdrawStart } from './supervision.ts';

// Re-exported for the modules (and tests) that import them from here.
export type { LogLevel, ServerRecord };
export type { ReconcilerDeps, ServerLogs } from './context.ts';

/** Warnings kept per record for GET /manifests. */
const MAX_WARNINGS = 5;

export class Reconciler extends EventEmitter implements ReconcileContext {
  readonly cache = new ServerCache();
  readonly records = this.cache.records;
  readonly identities: ServerIdentities;
  readonly deps: ReconcilerDeps;
  readonly operations: Operations;
  /** What changed in each server's status, recently (GET /servers/{id}/events). */
  readonly events = new ServerEvents();
  /** What the API, the proxy and metrics read; this reconciler is its only writer. */
  readonly index: ServerIndex = new LiveServerIndex(this);

  constructor(deps: ReconcilerDeps) {
    super();
    this.setMaxListeners(0);
    this.deps = deps;
    this.identities = new ServerIdentities(deps.layout);
    this.operations = new Operations((name) => deps.enqueue(name), (message) => this.log(message));
    // An editor exited (or became ready): look at the server again; its state says how it ended.
    deps.runtime.onChange((name) => deps.enqueue(name));
    // What the platform says about an editor (Kubernetes events) is the server's event too.
    deps.runtime.onEvent((name, event) => {
      if (!this.records.has(name)) return;
      deps.logs.event(name, event.level, `${event.reason}: ${event.message}`);
      this.events.add(name, { time: new Date().toISOString(), type: event.level === 'WARN' ? 'Warning' : 'Normal', reason: event.reason, message: event.message });
    });
  }

  nameOfUid(uid: string): string | undefined {
    return this.identities.nameOf(uid);
  }

  get ports(): PortAllocator {
    return this.deps.ports;
  }

  /** Reads the uids kept before (status records, older uid files); call before the first prime or reconcile. */
  async loadIdentities(): Promise<void> {
    await this.identities.load(await this.deps.store.recordedUids());
  }

  /**
   * Deletes the server on its next reconcile although its file is missing or invalid and so
   * cannot carry metadata.deletionTimestamp (DELETE /servers/{id} asked for it).
   */
  requestDeletion(name: string): void {
    this.cache.deletions.add(name);
  }

  /** The runtime's reference to each server's running editor, by name, for the stats sampler. */
  refs(): Map<string, RuntimeRef> {
    return this.cache.refs();
  }

  /** Where the server's running editor answers, if it runs. */
  endpointOf(name: string): EditorEndpoint | undefined {
    const live = this.cache.lives.get(name);
    return live?.ref ? live.endpoint : undefined;
  }

  /** True when the server's editor runs, by the runtime's word (for processes, /proc shows the one launched for this server). */
  isEditorRunning(name: string): boolean {
    const ref = this.cache.lives.get(name)?.ref;
    return ref !== undefined && isRunning(this.deps.runtime.state(name, ref).state);
  }

  /** What a refresh saw on /healthz (see recordHealth in ensure-health.ts). */
  recordHealth(name: string, answered: boolean): boolean {
    return recordHealth(this.cache.lives.get(name), answered);
  }

  /** Where the managed editor running on the port answers, else undefined (the proxy routes only there). */
  routeTo(port: number): EditorEndpoint | undefined {
    const name = this.deps.ports.owner(port);
    if (name === undefined) return undefined;
    const phase = this.records.get(name)?.server?.status?.phase;
    // A woken editor shows the starting page (the proxy's unroutable hook) until it is Running.
    const routable = phase === 'Running' || (phase === 'Starting' && !this.cache.lives.get(name)?.waking);
    return routable ? this.endpointOf(name) : undefined;
  }

  /** Asks a server stopped for idleness to start again (see wake in ensure-idle.ts); false for any other. */
  wake(name: string, why: string): boolean {
    return wake(this, name, why);
  }

  /** Where a server stopped for idleness is on its way back (see wakeState in ensure-idle.ts). */
  wakeState(name: string): WakeState | undefined {
    return wakeState(this, name);
  }

  /** Takes over an editor that was already running (the runtime checked it is this server's). */
  adopt(name: string, ref: RuntimeRef, endpoint: EditorEndpoint | undefined): void {
    adoptEditor(this, name, ref, endpoint);
  }

  /**
   * Takes over an editor found at start-up whose manifest is missing: like a file that just
   * went, it is stopped after the grace period unless the file appears. Its port stays held.
   */
  adoptOrphan(name: string, ref: RuntimeRef, endpoint: EditorEndpoint | undefined, port: number | undefined, folder: string | undefined): void {
    this.adopt(name, ref, endpoint);
    const live = this.cache.live(name);
    live.seenIn = folder;
    live.missingSince = Date.now();
    if (port !== undefined) this.deps.ports.reserve(name, port);
    this.log(`editor ${name} (${describeRef(ref)}) has no manifest: it is stopped in ${this.deps.config.controller.orphanGraceSeconds} s unless ${this.deps.store.fileOf(name)} appears; its files are kept`);
  }

  /**
   * Remembers a valid manifest read at start-up, gives it its uid and holds its port before
   * anyone allocates. A status copied from another server holds nothing.
   */
  prime(server: EditorServer, folder?: string): void {
    const name = server.metadata.name;
    const resolved = this.identities.resolve(name, server.metadata.uid);
    if (inheritedStatus(this.deps.layout, name, server, resolved) !== undefined) delete server.status;
    server.metadata.uid = resolved.uid;
    this.cache.setRecord({ name, server });
    if (folder !== undefined) this.cache.live(name).seenIn = folder;
    const port = server.spec.port ?? server.status?.port;
    if (port !== undefined) this.deps.ports.reserve(name, port);
  }

  async reconcile(name: string): Promise<ReconcileResult> {
    try {
      const result = await this.#reconcile(name);
      if (this.cache.lives.has(name)) this.cache.live(name).storageTries = undefined;
      return result;
    } catch (error) {
      if (error instanceof StorageUnavailable) return storageUnavailable(this, name, error);
      throw error;
    }
  }

  async #reconcile(name: string): Promise<ReconcileResult> {
    const { deps, cache } = this;
    const read = await deps.store.read(name);
    if (read.kind === 'missing') return whileMissing(this, name);
    const live = cache.live(name);
    live.seenIn = (await deps.store.folderIdentity()) ?? live.seenIn;
    live.missingSince = undefined;
    if (read.kind === 'invalid') {
      if (cache.deletions.has(name)) return deleteServer(this, name);
      return markInvalid(this, name, read.errors);
    }

    const server = read.server;
    const { uid, warning } = ensureIdentity(this.identities, deps.layout, name, server);
    const before = cache.records.get(name)?.server;
    const record = cache.setRecord({ name, server });
    // A manifest edit that changes no status (a display name, a label) is news too; a server
    // seen for the first time is told with its first status commit (its port, its workspace).
    if (before === undefined) cache.unannounced.add(name);
    else if (!sameManifest(before, server)) this.emit('changed', name);
    // In the same tick as the record is shown: no answer names a process the service did not launch.
    if (server.status?.runtimeRef && !live.ref) distrustForeignRef(this, name, server.status);
    if (record.absence !== undefined) {
      record.absence = undefined;
      this.emit('changed', name);
    }
    const displayName = displayNameOf(server);
    deps.logs.track({ name, id: uid, displayName });
    if (server.metadata.deletionTimestamp || cache.deletions.has(name)) return deleteServer(this, name);

    if (warning) this.warn(name, warning);
    if (!server.status) deps.logs.event(name, 'INFO', `created "${displayName}"`);
    // observedGeneration is set when status settles (commitStatus), not here before any work.
    const status: EditorServerStatus = structuredClone(server.status ?? { phase: 'Pending' });

    // A terminal problem recorded for this very spec: nothing to do until the spec changes.
    const specKey = JSON.stringify([server.spec, server.metadata.annotations?.[RESTARTED_AT]]);
    if (live.terminal === specKey) return;
    live.terminal = undefined;

    const port = await ensurePort(deps, name, server);
    if (typeof port !== 'number') {
      await this.commit(record, uid, { ...status, phase: 'Failed', reason: 'PortUnavailable', message: port.problem });
      if (!port.terminal) return { requeueAfterMs: 5000 };
      live.terminal = specKey;
      throw new TerminalError('PortUnavailable', port.problem);
    }
    status.port = port;
    // A restore under way holds the server before its folders, settings and editor are touched.
    const restored = await ensureRestored(this, record, uid, status);
    if (restored !== 'ready') return restored === 'gone' ? undefined : restored;
    status.workspacePath = await ensureWorkspaceOnce(deps, name, live);
    const source = await ensureWorkspaceSource(this, record, uid, status).catch((error) => {
      if (error instanceof TerminalError) live.terminal = specKey;
      throw error;
    });
    if (source !== 'ready') return source === 'gone' ? undefined : source;
    await ensureSettings(deps, name, live, server.spec, true);
    const { alive, wait } = await observeProcess(this, name, status, port);
    if (wait) return wait;

    // What was observed, as plain data; decide() says what to do (the table is in decide.ts).
    const now = Date.now();
    const action = decide({
      wantRunning: server.spec.running,
      restartAt: server.metadata.annotations?.[RESTARTED_AT],
      restartHonoured: status.observedRestartedAt,
      alive,
      port,
      editorPort: live.endpoint?.port ?? server.status?.port,
      evictedFor: deps.capacity?.evictionOf(name),
      idleStop: !status.idleStoppedAt ? 'none' : live.wakeRequested ? 'woken' : 'holding',
      recordedRunning: Boolean(status.runtimeRef),
      phase: status.phase,
      reason: status.reason,
      nextRestartAt: live.nextRestartAt,
      now,
    });
    return this.#act(action, record, uid, status, live, port, now);
  }

  /** Does what decide() said, with the steps each action takes. */
  async #act(
    action: Action, record: ServerRecord, uid: string, status: EditorServerStatus, live: Live, port: number, now: number,
  ): Promise<ReconcileResult> {
    const { deps } = this;
    const name = record.name;
    switch (action.kind) {
      case 'stop': {
        if (action.stopEditor) await stopProcess(this, record, uid, status, 'stopped on request');
        // A start the platform has not placed yet still stands there: withdrawn through list().
        else if (live.notPlaced) await withdrawStart(this, name);
        clearIdleStop(status, live);
        live.crashTimes = [];
        live.nextRestartAt = undefined;
        if (action.honourRestart !== undefined) status.observedRestartedAt = action.honourRestart;
        const extensions = await ensureExtensions(this, record, uid, status);
        if (extensions !== 'ready') return extensions === 'gone' ? undefined : extensions;
        Object.assign(clearProcess(status), { phase: 'Stopped' as Phase, reason: undefined, message: undefined });
        await this.commit(record, uid, status);
        return;
      }
      case 'restart':
        if (action.stopEditor) await stopProcess(this, record, uid, status, 'stopped for a restart');
        clearIdleStop(status, live);
        status.observedRestartedAt = action.honourRestart;
        status.restarts = (status.restarts ?? 0) + 1;
        // A restart is also the way to retry extensions that failed to install.
        status.extensions = status.extensions?.filter((e) => e.state !== 'Failed');
        live.crashTimes = [];
        live.nextRestartAt = undefined;
        live.lastExit = undefined;
        deps.logs.event(name, 'INFO', 'restarting');
        break; // to the start
      case 'move':
        await stopProcess(this, record, uid, status, `stopped to move from port ${action.from} to ${action.to}`);
        break; // to the start, on the new port
      case 'evict':
        // The least recently active idle editor, and another start needs its room (whenFull stopIdlest).
        return stopForCapacity(this, record, uid, status, action.for);
      case 'supervise': {
        // Settings asked for are applied at once (above); none asked for, where an editor reads them: before it starts, and while it runs.
        await ensureSettings(deps, name, live, record.server!.spec);
        // Extensions follow the spec while the editor runs too: installs never hold its health
        // checks, and neither does a failure to look at them (on a cluster that is an exec through
        // the node's kubelet, which may be the very thing that is down).
        const extensions = await ensureExtensions(this, record, uid, status, 'running').catch((error: unknown) => error as Error);
        if (extensions instanceof Error) this.log(`the extensions of ${name} were not looked at: ${extensions.message}`);
        return ensureIdle(this, record, uid, status, live, await observeRunning(this, record, uid, status, live, port));
      }
      default:
        // The editor does not run. holdIdleStop settles the idle stop as decide() read it: it
        // records the hold (hold idle-stop: stopped for idleness, it starts again when woken),
        // lifts a woken one (wake), or else forgets a stale wake request.
        await holdIdleStop(this, record, uid, status, live);
        if (action.kind === 'hold') return; // failed or stopped for capacity: until someone starts it again
        if (action.kind === 'record-crash') {
          // We believed it was running and it is gone: it exited or crashed.
          const ended = status.runtimeRef;
          const delay = recordCrash(this, name, status, live);
          await this.commit(record, uid, status);
          if (delay !== undefined) return { requeueAfterMs: delay };
          // Not started again: nothing the platform brings back in its place may run either (a
          // StatefulSet makes a deleted Pod again). A process that ended is not signalled.
          if (ended) await deps.runtime.stop(name, ended, deps.config.editor.stopGraceSeconds * 1000).catch((error: Error) => this.log(`stopping what is left of ${name}'s editor: ${error.message}`));
          return;
        }
        if (action.kind === 'wait') return { requeueAfterMs: action.untilMs - now };
    }

    await ensureSettings(deps, name, live, record.server!.spec);
    const extensions = await ensureExtensions(this, record, uid, status);
    if (extensions !== 'ready') return extensions === 'gone' ? undefined : extensions;
    const room = await ensureCapacity(this, record, uid, status);
    if (room !== 'admitted') return room;
    // Launched (it counts as running now) or given up: its held slot is not needed any more.
    return startProcess(this, record, uid, status, live, port).finally(() => deps.capacity?.release(name));
  }

  /** Stops the editor because the service shuts down (see stopForShutdown in supervision.ts). */
  stopForShutdown(name: string): Promise<void> {
    return stopForShutdown(this, name);
  }

  /** Stops the server's editors and removes what the server owns; the manifest is the caller's. Only for a deliberate delete. */
  teardown(name: string): Promise<void> {
    return teardown(this, name);
  }

  commit(record: ServerRecord, uid: string, status: EditorServerStatus): Promise<'ok' | 'gone'> {
    return commitStatus(this, record, uid, status);
  }

  warn(name: string, message: string): void {
    const record = this.records.get(name);
    if (!record || record.warnings?.includes(message)) return;
    record.warnings = [...(record.warnings ?? []), message].slice(-MAX_WARNINGS);
    this.emit('changed', name);
    this.log(`manifest ${this.deps.store.fileOf(name)}: ${message}`);
    this.deps.logs.event(name, 'WARN', message);
  }

  log(message: string): void {
    (this.deps.log ?? console.log)(message);
  }
}

/** The same manifest apart from status (status changes are told by their commit). */
function sameManifest(a: EditorServer, b: EditorServer): boolean {
  return JSON.stringify(a.metadata) === JSON.stringify(b.metadata) && JSON.stringify(a.spec) === JSON.stringify(b.spec);
}
