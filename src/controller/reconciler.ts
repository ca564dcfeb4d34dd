// reconcile(name): read the manifest and the real process, make one step of progress toward the
// spec, and write status back when it changed. Level-triggered and idempotent.
import { EventEmitter } from 'node:events';
import { promises as fs } from 'node:fs';
import { unknownExtensionGroups, type Config } from '../config/settings.ts';
import type { ExtensionInstaller } from '../extensions/installer.ts';
import type { LogLevel, TrackedServer } from '../logs/entry.ts';
import type { ManifestStore } from '../manifests/store.ts';
import { RESTARTED_AT, type EditorServer, type EditorServerStatus, type ExtensionStatus, type Phase } from '../manifests/types.ts';
import { checkHealth, waitHealthy } from '../runtime/health.ts';
import type { EditorRuntime, ExitInfo, ProcessIdentity } from '../runtime/processes.ts';
import { ensureWorkspace, removeServerFiles, type DataLayout } from '../workspace/layout.ts';
import { deriveConditions } from './conditions.ts';
import { ServerIdentities, type ResolvedUid } from './identity.ts';
import type { PortAllocator, PortProbe } from './ports.ts';
import type { ReconcileResult } from './queue.ts';

// Re-exported for the modules (and tests) that import it from here.
export type { LogLevel };

/** What the controller needs from the log hub. */
export interface ServerLogs {
  rawPaths(name: string): { dir: string; stdout: string; stderr: string };
  track(server: TrackedServer): void;
  event(name: string, level: LogLevel, message: string): void;
  untrack(name: string, options?: { remove?: boolean }): Promise<void>;
}

/** The controller's view of one manifest: the last valid object, and the file's problems if any. */
export interface ServerRecord {
  name: string;
  server?: EditorServer;
  problems?: string[];
  /** What the controller noticed and did about the file (a copied uid or status), newest last. */
  warnings?: string[];
  /** Set while the file (or the whole folder) is missing: what happens next. */
  absence?: string;
}

/** Facts about a server that live only in memory. */
interface Live {
  identity?: ProcessIdentity;
  /** The port the live editor listens on (from its launch or its command line). */
  port?: number;
  /** The manifests folder (device and inode) the file was last read from. */
  seenIn?: string;
  /** Since when the file has been missing from the folder it was in. */
  missingSince?: number;
  healthy: boolean;
  probe?: symbol;
  probeFailed?: string;
  lastExit?: ExitInfo;
  crashTimes: number[];
  nextRestartAt?: number;
  /** When the editor was first seen dead with its exit not yet reported. */
  exitWaitSince?: number;
  /** The workspace and editor folders exist (checked again before every launch). */
  workspaceMade?: boolean;
  /** The settings.json text last written or found on disk. */
  settingsText?: string;
  /** Extension groups the spec names that the config lacks, already reported. */
  unknownGroups?: string[];
}

export interface ReconcilerDeps {
  store: ManifestStore;
  runtime: EditorRuntime;
  ports: PortAllocator;
  portIsFree: PortProbe;
  layout: DataLayout;
  logs: ServerLogs;
  installer: ExtensionInstaller;
  config: Config;
  /** Puts a name back on the queue (a probe finished, a process exited). */
  enqueue: (name: string) => void;
  log?: (message: string) => void;
}

const CRASH_WINDOW_MS = 10 * 60_000;
/** How long a dead editor's unreported exit is waited for before it is recorded without a code. */
const EXIT_WAIT_MS = 1000;
/** How often an editor that missed its start deadline is asked /healthz again. */
const UNHEALTHY_RECHECK_MS = 10_000;
/** An editor that stays up this long forgets its earlier crashes. */
const STABLE_AFTER_MS = 60_000;
/** How often a server paused by a missing manifests folder looks again. */
const FOLDER_RECHECK_MS = 2000;
/** Warnings kept per record for GET /manifests. */
const MAX_WARNINGS = 5;

export class Reconciler extends EventEmitter {
  readonly records = new Map<string, ServerRecord>();
  private readonly lives = new Map<string, Live>();
  /** Names whose deletion was asked for while their file is missing or invalid (it cannot carry the mark). */
  private readonly deletions = new Set<string>();
  /** Pids of editors stopped because their file stayed missing: a status naming one, when the file is back, is stale. */
  private readonly stoppedWhileMissing = new Map<string, number>();
  private readonly identities: ServerIdentities;
  private readonly deps: ReconcilerDeps;

  constructor(deps: ReconcilerDeps) {
    super();
    this.setMaxListeners(0);
    this.deps = deps;
    this.identities = new ServerIdentities(deps.layout);
    deps.runtime.onExit((name, identity, exit) => {
      const live = this.lives.get(name);
      if (live?.identity?.pid === identity.pid) live.lastExit = exit;
      deps.enqueue(name);
    });
  }

  nameOfUid(uid: string): string | undefined {
    return this.identities.nameOf(uid);
  }

  get ports(): PortAllocator {
    return this.deps.ports;
  }

  /** Reads the uids kept in the data folder; call before the first prime or reconcile. */
  loadIdentities(): Promise<void> {
    return this.identities.load();
  }

  /**
   * Deletes the server on its next reconcile although its file is missing or invalid and so
   * cannot carry metadata.deletionTimestamp (DELETE /servers/{id} asked for it).
   */
  requestDeletion(name: string): void {
    this.deletions.add(name);
  }

  /** Live pids of running editors, for the stats sampler. */
  pids(): number[] {
    return [...this.lives.values()].flatMap((l) => (l.identity ? [l.identity.pid] : []));
  }

  /** True when the server's editor runs, checked in /proc to be the one launched for this server. */
  isProcessAlive(name: string): boolean {
    const identity = this.lives.get(name)?.identity;
    return identity !== undefined && this.deps.runtime.owns(name, identity) !== undefined;
  }

  /**
   * What a refresh saw on /healthz. Not answering: the next reconcile probes again before
   * calling it Running. Answering: it is Running, whatever an earlier probe concluded.
   */
  recordHealth(name: string, answered: boolean): void {
    const live = this.lives.get(name);
    if (!live?.identity) return;
    if (answered) {
      live.healthy = true;
      live.probeFailed = undefined;
    } else if (live.healthy) {
      // It was up and stopped answering: Failed (Unhealthy), asked again every 10 s.
      live.healthy = false;
      live.probeFailed = 'code-server stopped answering /healthz';
    }
  }

  /** True when a managed editor is running on the port (the proxy routes only there). */
  isRunningPort(port: number): boolean {
    const name = this.deps.ports.owner(port);
    if (name === undefined) return false;
    const phase = this.records.get(name)?.server?.status?.phase;
    return this.lives.get(name)?.identity !== undefined && (phase === 'Running' || phase === 'Starting');
  }

  /** Takes over an editor that was already running (verified in /proc to be this server's). */
  adopt(name: string, identity: ProcessIdentity, port: number | undefined): void {
    const live = this.live(name);
    live.identity = identity;
    live.port = port;
    this.deps.runtime.watch(name, identity);
  }

  /**
   * Takes over an editor found at start-up whose manifest is missing: like a file that just
   * went, it is stopped after the grace period unless the file appears. Its port stays held.
   */
  adoptOrphan(name: string, identity: ProcessIdentity, port: number | undefined, folder: string | undefined): void {
    this.adopt(name, identity, port);
    const live = this.live(name);
    live.seenIn = folder;
    live.missingSince = Date.now();
    if (port !== undefined) this.deps.ports.reserve(name, port);
    this.log(`editor ${name} (pid ${identity.pid}) has no manifest: it is stopped in ${this.deps.config.controller.orphanGraceSeconds} s unless ${this.deps.store.fileOf(name)} appears; its files are kept`);
  }

  /**
   * Remembers a valid manifest read at start-up, gives it its uid and holds its port before
   * anyone allocates. A status copied from another server holds nothing.
   */
  prime(server: EditorServer, folder?: string): void {
    const name = server.metadata.name;
    const resolved = this.identities.resolve(name, server.metadata.uid);
    if (this.inheritedStatus(name, server, resolved) !== undefined) delete server.status;
    server.metadata.uid = resolved.uid;
    this.setRecord({ name, server });
    if (folder !== undefined) this.live(name).seenIn = folder;
    const port = server.spec.port ?? server.status?.port;
    if (port !== undefined) this.deps.ports.reserve(name, port);
  }

  async reconcile(name: string): Promise<ReconcileResult> {
    const read = await this.deps.store.read(name);
    if (read.kind === 'missing') return this.whileMissing(name);
    const live = this.live(name);
    live.seenIn = (await this.deps.store.folderIdentity()) ?? live.seenIn;
    live.missingSince = undefined;
    if (read.kind === 'invalid') {
      if (this.deletions.has(name)) return this.delete(name);
      return this.markInvalid(name, read.errors);
    }

    const server = read.server;
    // The uid is the name's own: kept from before, else the manifest's unless another server has it.
    const resolved = this.identities.resolve(name, server.metadata.uid);
    const uid = resolved.uid;
    const inherited = this.inheritedStatus(name, server, resolved);
    server.metadata.uid = uid;
    // A status copied from another server says nothing about this one: it starts afresh.
    if (inherited) delete server.status;
    const record = this.setRecord({ name, server });
    record.absence = undefined;
    const displayName = server.spec.displayName ?? name;
    this.deps.logs.track({ name, id: uid, displayName });
    if (server.metadata.deletionTimestamp || this.deletions.has(name)) return this.delete(name);
    await this.identities.store(name);

    if (inherited) this.warn(name, inherited);
    else if (resolved.refused !== undefined) this.warn(name, `metadata.uid ${resolved.refused} is not this server's uid: it keeps its uid ${uid}`);
    if (!server.status) this.deps.logs.event(name, 'INFO', `created "${displayName}"`);
    const status: EditorServerStatus = structuredClone(server.status ?? { phase: 'Pending' });
    if (server.metadata.generation !== undefined) status.observedGeneration = server.metadata.generation;

    // Port: the spec's, else the one already held, else a fresh one from the range.
    const port = await this.ensurePort(name, server);
    if (typeof port === 'string') {
      await this.commit(record, uid, { ...status, phase: 'Failed', reason: 'PortUnavailable', message: port });
      return { requeueAfterMs: 5000 };
    }
    status.port = port;
    // Folders are made once per name here, and checked again before every launch.
    if (!live.workspaceMade) {
      await ensureWorkspace(this.deps.layout, name);
      live.workspaceMade = true;
    }
    status.workspacePath = this.deps.layout.workspace(name);
    await this.ensureSettings(name, live, server.spec.settings);

    // The process as it really is. A pid in status is adopted only if /proc shows it is the
    // editor launched for this very server; a file saying so is never enough.
    if (status.pid && status.pid === this.stoppedWhileMissing.get(name)) clearProcess(status);
    this.stoppedWhileMissing.delete(name);
    if (!live.identity && status.pid) {
      const recorded = status.pidStartTicks === undefined ? undefined : { pid: status.pid, startTicks: status.pidStartTicks };
      const owned = recorded && this.deps.runtime.owns(name, recorded);
      if (recorded && owned) {
        this.adopt(name, recorded, owned.port);
        live.healthy = (await checkHealth(owned.port ?? port)).ok;
      } else if (!recorded || this.deps.runtime.isAlive(recorded)) {
        this.warn(name, `status.pid ${status.pid} is not this server's editor (a copied or hand-written status?): ignored, and never signalled`);
        clearProcess(status);
      }
    }
    const alive = live.identity !== undefined && this.deps.runtime.isAlive(live.identity);
    if (!alive && live.identity) {
      // Dead but not reaped yet: its exit, with the code or signal that ended it, is moments
      // away and queues this name again at once. Wait for it; the requeue only bounds the wait.
      const waited = Date.now() - (live.exitWaitSince ??= Date.now());
      if (this.deps.runtime.exitPending(live.identity) && waited < EXIT_WAIT_MS) {
        return { requeueAfterMs: EXIT_WAIT_MS - waited, waiting: true };
      }
      live.identity = undefined;
    }
    live.exitWaitSince = undefined;

    const restartAt = server.metadata.annotations?.[RESTARTED_AT];
    const restartRequested = restartAt !== undefined && restartAt !== status.observedRestartedAt;

    if (!server.spec.running) {
      if (alive) await this.stopProcess(record, uid, status, 'stopped on request');
      live.crashTimes = [];
      live.nextRestartAt = undefined;
      if (restartRequested) status.observedRestartedAt = restartAt;
      if (!(await this.ensureExtensions(record, uid, status))) return;
      Object.assign(clearProcess(status), { phase: 'Stopped' as Phase, reason: undefined, message: undefined });
      await this.commit(record, uid, status);
      return;
    }

    if (restartRequested) {
      if (alive) await this.stopProcess(record, uid, status, 'stopped for a restart');
      status.observedRestartedAt = restartAt;
      status.restarts = (status.restarts ?? 0) + 1;
      // A restart is also the way to retry extensions that failed to install.
      status.extensions = status.extensions?.filter((e) => e.state !== 'Failed');
      live.crashTimes = [];
      live.nextRestartAt = undefined;
      live.lastExit = undefined;
      this.deps.logs.event(name, 'INFO', 'restarting');
    } else if (alive && (live.port ?? server.status?.port) !== undefined && (live.port ?? server.status?.port) !== port) {
      // The port changed under a running editor (a new spec.port, or a replaced manifest): restart it on the new one.
      await this.stopProcess(record, uid, status, `stopped to move from port ${live.port ?? server.status?.port} to ${port}`);
    } else if (alive) {
      return this.observeRunning(record, uid, status, live, port);
    } else if (status.pid) {
      // We believed it was running and it is gone: it exited or crashed.
      const delay = this.recordCrash(name, status, live);
      await this.commit(record, uid, status);
      return delay === undefined ? undefined : { requeueAfterMs: delay };
    } else if (status.phase === 'Failed' && (status.reason === 'Crashed' || status.reason === 'Exited')) {
      return; // restartPolicy said no: it stays failed until someone starts it again
    } else if (live.nextRestartAt !== undefined && Date.now() < live.nextRestartAt) {
      return { requeueAfterMs: live.nextRestartAt - Date.now() };
    }

    if (!(await this.ensureExtensions(record, uid, status))) return;
    return this.startProcess(record, uid, status, live, port);
  }

  /**
   * Stops the server's running editor because the service is shutting down, and records it
   * Stopped (ServiceShutdown) with no pid. spec.running stays as it is: the next start of the
   * service starts again what the manifest asks for. Call only once the queue is idle.
   */
  async stopForShutdown(name: string): Promise<void> {
    const record = this.records.get(name);
    const server = record?.server;
    const live = this.lives.get(name);
    const identity = live?.identity;
    if (!record || !server?.status || !live || !identity || !this.deps.runtime.isAlive(identity)) return;
    this.deps.logs.event(name, 'INFO', 'stopping: the service is shutting down');
    live.probe = undefined;
    await this.deps.runtime.stop(name, identity, this.deps.config.editor.stopGraceSeconds * 1000);
    live.identity = undefined;
    live.port = undefined;
    live.healthy = false;
    const status = clearProcess(structuredClone(server.status));
    Object.assign(status, {
      phase: 'Stopped' as Phase,
      reason: 'ServiceShutdown',
      message: 'stopped because the service shut down; the next start of the service acts on spec.running again',
    });
    // Every record's uid is given when its manifest is first read (prime or reconcile).
    await this.commit(record, server.metadata.uid!, status);
    this.deps.logs.event(name, 'INFO', 'stopped: the service shut down');
  }

  /** Stops the server's editors and removes what the server owns; the manifest is the caller's. Only for a deliberate delete. */
  async teardown(name: string): Promise<void> {
    await this.stopEditorsOf(name);
    this.deps.logs.event(name, 'INFO', 'deleted');
    await removeServerFiles(this.deps.layout, name);
    await this.deps.logs.untrack(name, { remove: true });
  }

  /**
   * Stops the editor this controller runs for the server, and any other /proc shows was
   * launched for it (one left running while its manifest was invalid). A pid in status plays no part.
   */
  private async stopEditorsOf(name: string): Promise<void> {
    const graceMs = this.deps.config.editor.stopGraceSeconds * 1000;
    const live = this.lives.get(name);
    if (live?.identity) await this.deps.runtime.stop(name, live.identity, graceMs);
    for (const found of this.deps.runtime.discover()) {
      if (found.name === name) await this.deps.runtime.stop(name, found.identity, graceMs);
    }
    if (live) {
      live.identity = undefined;
      live.port = undefined;
    }
  }

  /** A deliberate delete (API, or a deletion mark): editor, files, the manifest, and the uid go. */
  private async delete(name: string): Promise<ReconcileResult> {
    await this.teardown(name);
    await this.deps.store.remove(name).catch((error) =>
      this.log(`deleted server ${name}, but its manifest ${this.deps.store.fileOf(name)} could not be removed: ${(error as Error).message}`));
    this.deletions.delete(name);
    this.identities.forget(name);
    return this.forget(name);
  }

  /**
   * The file is missing. That is never a request to delete: only the API or a deletion mark
   * deletes files. A folder that vanished or was replaced pauses the server (nothing stopped).
   * A file gone from its folder stops the editor after the grace period, unless it comes back
   * (an editor's delete-then-write save); the server's files are kept either way.
   */
  private async whileMissing(name: string): Promise<ReconcileResult> {
    if (this.deletions.has(name)) return this.delete(name);
    const record = this.records.get(name);
    const live = this.lives.get(name);
    if (!record && !live?.identity) return this.forget(name);
    const file = this.deps.store.fileOf(name);
    const folder = await this.deps.store.folderIdentity();
    if (folder === undefined || (live?.seenIn !== undefined && folder !== live.seenIn)) {
      if (live) live.missingSince = undefined;
      this.setAbsence(name, folder === undefined
        ? `the manifests folder ${this.deps.store.dir} is missing: nothing is stopped or deleted until it is back`
        : `${file} is not in the folder that replaced the manifests folder it was in: nothing is stopped or deleted until it is back`);
      return { requeueAfterMs: FOLDER_RECHECK_MS };
    }
    const graceMs = this.deps.config.controller.orphanGraceSeconds * 1000;
    const state = this.live(name);
    const since = (state.missingSince ??= Date.now());
    const left = since + graceMs - Date.now();
    if (left > 0) {
      const message = `${file} is missing: its editor is stopped at ${new Date(since + graceMs).toISOString()} unless the file comes back; its files are kept`;
      if (this.setAbsence(name, message)) {
        this.log(message);
        if (record) this.deps.logs.event(name, 'WARN', message);
      }
      return { requeueAfterMs: left };
    }
    state.probe = undefined;
    if (state.identity) this.stoppedWhileMissing.set(name, state.identity.pid);
    await this.stopEditorsOf(name);
    const message = `${file} has been missing for ${graceMs / 1000} s: its editor is stopped; its workspace and editor data are kept (DELETE /servers/{id} deletes a server)`;
    this.log(message);
    if (record) this.deps.logs.event(name, 'WARN', message);
    return this.forget(name);
  }

  /** Records what happens while the file is missing; true when that changed. */
  private setAbsence(name: string, message: string): boolean {
    const record = this.records.get(name);
    if (!record || record.absence === message) return false;
    record.absence = message;
    this.emit('changed', name);
    return true;
  }

  /** Why the manifest's status belongs to another server (a copy of its file), or undefined. */
  private inheritedStatus(name: string, server: EditorServer, resolved: ResolvedUid): string | undefined {
    if (resolved.holder !== undefined && resolved.holder !== name) {
      return `metadata.uid ${resolved.refused} belongs to server "${resolved.holder}" (is this file a copy of its manifest?): this server gets a uid of its own, ${resolved.uid}, and its own port and editor`;
    }
    const workspace = server.status?.workspacePath;
    if (workspace !== undefined && workspace !== this.deps.layout.workspace(name)) {
      return `status names the workspace ${workspace}, not this server's (is this file a copy of another manifest?): its status is started afresh, with a port and editor of its own`;
    }
    return undefined;
  }

  /** Says once, in the service log, the server's log and GET /manifests, what the controller noticed. */
  private warn(name: string, message: string): void {
    const record = this.records.get(name);
    if (!record || record.warnings?.includes(message)) return;
    record.warnings = [...(record.warnings ?? []), message].slice(-MAX_WARNINGS);
    this.log(`manifest ${this.deps.store.fileOf(name)}: ${message}`);
    this.deps.logs.event(name, 'WARN', message);
  }

  private forget(name: string): ReconcileResult {
    this.records.delete(name);
    this.lives.delete(name);
    this.deps.ports.release(name);
    this.emit('deleted', name);
    this.emit('changed', name);
  }

  private markInvalid(name: string, errors: string[]): ReconcileResult {
    const record = this.records.get(name) ?? { name };
    record.absence = undefined;
    const changed = JSON.stringify(record.problems) !== JSON.stringify(errors);
    record.problems = errors;
    this.records.set(name, record);
    if (changed) {
      this.log(`manifest ${this.deps.store.fileOf(name)} is invalid; its editor is left as it is:\n  ${errors.join('\n  ')}`);
      if (record.server) this.deps.logs.event(name, 'ERROR', `manifest is invalid: ${errors.join('; ')}`);
    }
    this.emit('changed', name);
  }

  private async ensurePort(name: string, server: EditorServer): Promise<number | string> {
    const { ports } = this.deps;
    const wanted = server.spec.port;
    if (wanted !== undefined) {
      const excluded = ports.excluded(wanted);
      if (excluded !== undefined) return `spec.port ${wanted} is ${excluded}: choose another port`;
      if (!ports.reserve(name, wanted)) return `spec.port ${wanted} is already used by server "${ports.owner(wanted)}": choose another port`;
      return wanted;
    }
    const recorded = server.status?.port;
    if (recorded !== undefined && ports.reserve(name, recorded)) return recorded;
    const { min, max } = this.deps.config.ports;
    return (await ports.allocate(name)) ?? `no free port left in ${min}-${max}: stop or delete a server, or widen ports in the config`;
  }

  private async ensureSettings(name: string, live: Live, settings: Record<string, unknown> | undefined): Promise<void> {
    if (!settings) return;
    const text = JSON.stringify(settings, null, 2) + '\n';
    // Written when the spec's settings change, not read back on every reconcile; the file is
    // read once per name (after a restart) so an adopted editor sees no needless rewrite.
    if (live.settingsText === text) return;
    const dir = `${this.deps.layout.editor(name).userDataDir}/User`;
    const file = `${dir}/settings.json`;
    if (live.settingsText === undefined && (await fs.readFile(file, 'utf8').catch(() => undefined)) === text) {
      live.settingsText = text;
      return;
    }
    await fs.mkdir(dir, { recursive: true });
    await fs.writeFile(file + '.tmp', text);
    await fs.rename(file + '.tmp', file);
    live.settingsText = text;
  }

  /** Installs the extensions the spec asks for that status does not list yet; false if the file vanished. */
  private async ensureExtensions(record: ServerRecord, uid: string, status: EditorServerStatus): Promise<boolean> {
    const server = record.server!;
    const groups = this.deps.config.extensionGroups;
    const unknown = unknownExtensionGroups(groups, server.spec.extensionGroups);
    const live = this.live(record.name);
    if (unknown.length > 0 && JSON.stringify(unknown) !== JSON.stringify(live.unknownGroups)) {
      live.unknownGroups = unknown;
      this.deps.logs.event(record.name, 'WARN', `spec.extensionGroups names groups the config does not define: ${unknown.join(', ')}`);
    }
    const wanted = [...new Set([
      ...(server.spec.extensionGroups ?? []).flatMap((g) => (Object.hasOwn(groups, g) ? groups[g] : [])),
      ...(server.spec.extensions ?? []),
    ])];
    const known = new Map((status.extensions ?? []).map((e) => [e.id, e]));
    const missing = wanted.filter((id) => !known.has(id));
    if (missing.length === 0) {
      status.extensions = wanted.map((id) => known.get(id)!);
      if (status.extensions.length === 0) delete status.extensions;
      return true;
    }
    const name = record.name;
    const previousPhase = status.phase;
    status.phase = 'Provisioning';
    status.reason = 'InstallingExtensions';
    if ((await this.commit(record, uid, status)) === 'gone') return false;
    const target = { name, ...this.deps.layout.editor(name) };
    for (const id of missing) {
      this.deps.logs.event(name, 'INFO', `installing extension ${id}`);
      const outcome = await this.deps.installer.install(target, id);
      const entry: ExtensionStatus = outcome.ok
        ? { id, state: 'Installed', ...(outcome.version ? { version: outcome.version } : {}) }
        : { id, state: 'Failed', message: outcome.message };
      known.set(id, entry);
      this.deps.logs.event(name, outcome.ok ? 'INFO' : 'WARN', outcome.ok
        ? `extension ${id} installed${outcome.version ? ` (${outcome.version})` : ''}`
        : `extension ${id} failed to install: ${outcome.message}`);
    }
    status.extensions = wanted.map((id) => known.get(id)!);
    status.phase = previousPhase;
    status.reason = undefined;
    return true;
  }

  private async startProcess(
    record: ServerRecord, uid: string, status: EditorServerStatus, live: Live, port: number,
  ): Promise<ReconcileResult> {
    const name = record.name;
    if (!(await this.deps.portIsFree(port))) {
      // Someone else took the port. One we chose ourselves moves; one the spec names cannot.
      const moved = record.server?.spec.port === undefined ? await this.deps.ports.reallocate(name) : undefined;
      if (moved === undefined) {
        const message = `port ${port} is held by a process this service does not manage: stop it, or set another spec.port`;
        this.deps.logs.event(name, 'ERROR', message);
        await this.commit(record, uid, { ...clearProcess(status), phase: 'Failed', reason: 'PortInUse', message });
        return { requeueAfterMs: 5000 };
      }
      this.deps.logs.event(name, 'WARN', `port ${port} is held by a process this service does not manage: moving to port ${moved}`);
      port = moved;
      status.port = moved;
    }
    // The port is on disk before the process exists, so a crash here never loses it.
    if (record.server?.status?.port !== port) {
      if ((await this.commit(record, uid, { ...status, phase: 'Starting' })) === 'gone') return;
    }
    await ensureWorkspace(this.deps.layout, name);
    const logs = this.deps.logs.rawPaths(name);
    const editor = this.deps.layout.editor(name);
    this.deps.logs.event(name, 'INFO', `starting code-server on port ${port}`);
    let identity: ProcessIdentity;
    try {
      identity = this.deps.runtime.launch({
        name, port,
        workspacePath: status.workspacePath!,
        userDataDir: editor.userDataDir,
        extensionsDir: editor.extensionsDir,
        configPath: editor.configPath,
        stdoutPath: logs.stdout,
        stderrPath: logs.stderr,
      });
    } catch (error) {
      const message = `could not launch the editor: ${(error as Error).message}`;
      this.deps.logs.event(name, 'ERROR', message);
      await this.commit(record, uid, { ...clearProcess(status), phase: 'Failed', reason: 'LaunchFailed', message });
      throw error;
    }
    live.identity = identity;
    live.port = port;
    live.healthy = false;
    live.lastExit = undefined;
    live.probeFailed = undefined;
    live.nextRestartAt = undefined;
    // Probe while the status is written: the editor does not wait for our disk.
    this.startProbe(name, live, port);
    Object.assign(status, {
      phase: 'Starting' as Phase,
      reason: undefined,
      message: undefined,
      pid: identity.pid,
      pidStartTicks: identity.startTicks,
      startTime: new Date().toISOString(),
    });
    await this.commit(record, uid, status);
  }

  private async observeRunning(
    record: ServerRecord, uid: string, status: EditorServerStatus, live: Live, port: number,
  ): Promise<ReconcileResult> {
    const name = record.name;
    if (status.pid !== live.identity!.pid) {
      Object.assign(status, { pid: live.identity!.pid, pidStartTicks: live.identity!.startTicks });
      status.startTime ??= new Date().toISOString();
    }
    // It answers after all (a slow first start): recover without anyone asking.
    if (live.probeFailed && (await checkHealth(port)).ok) this.recordHealth(name, true);
    if (live.healthy) {
      if (status.phase !== 'Running') this.deps.logs.event(name, 'INFO', `started: code-server answers on port ${port}`);
      Object.assign(status, { phase: 'Running' as Phase, reason: undefined, message: undefined });
      const stableFor = Date.now() - Date.parse(status.startTime ?? '');
      if (live.crashTimes.length > 0 && stableFor >= STABLE_AFTER_MS) live.crashTimes = [];
    } else if (live.probeFailed) {
      Object.assign(status, { phase: 'Failed' as Phase, reason: 'Unhealthy', message: live.probeFailed });
      await this.commit(record, uid, status);
      return { requeueAfterMs: UNHEALTHY_RECHECK_MS };
    } else {
      status.phase = 'Starting';
      if (!live.probe) this.startProbe(name, live, port);
    }
    await this.commit(record, uid, status);
    if (live.crashTimes.length > 0) return { requeueAfterMs: STABLE_AFTER_MS };
  }

  /** Polls /healthz in the background and puts the name back on the queue when it answers. */
  private startProbe(name: string, live: Live, port: number): void {
    const token = Symbol(name);
    live.probe = token;
    const identity = live.identity;
    const timeoutMs = this.deps.config.editor.readyTimeoutSeconds * 1000;
    void waitHealthy(port, Date.now() + timeoutMs, () => live.probe !== token || live.identity !== identity).then((ok) => {
      if (live.probe !== token) return;
      live.probe = undefined;
      if (ok) live.healthy = true;
      else if (live.identity === identity && identity && this.deps.runtime.isAlive(identity)) {
        live.probeFailed = `code-server did not answer /healthz on port ${port} within ${timeoutMs / 1000} s`;
        this.deps.logs.event(name, 'ERROR', live.probeFailed);
      }
      this.deps.enqueue(name);
    });
  }

  private async stopProcess(record: ServerRecord, uid: string, status: EditorServerStatus, why: string): Promise<void> {
    const name = record.name;
    const live = this.live(name);
    const identity = live.identity!;
    this.deps.logs.event(name, 'INFO', 'stopping');
    await this.commit(record, uid, { ...status, phase: 'Stopping' });
    live.probe = undefined;
    await this.deps.runtime.stop(name, identity, this.deps.config.editor.stopGraceSeconds * 1000);
    live.identity = undefined;
    live.port = undefined;
    live.healthy = false;
    live.lastExit = undefined;
    live.probeFailed = undefined;
    clearProcess(status);
    this.deps.logs.event(name, 'INFO', why);
  }

  /**
   * Handles an editor that died on its own: records the exit and applies spec.restartPolicy.
   * Returns the delay before the next start, or undefined when it is not to be restarted.
   */
  private recordCrash(name: string, status: EditorServerStatus, live: Live): number | undefined {
    const policy = this.records.get(name)?.server?.spec.restartPolicy ?? 'Never';
    const exit = live.lastExit ?? { code: null, signal: null };
    live.lastExit = undefined;
    const how = exit.signal ? `killed by ${exit.signal}` : exit.code !== null ? `exited with code ${exit.code}` : 'exited';
    const clean = exit.code === 0;
    status.lastExit = { code: exit.code, signal: exit.signal, at: new Date().toISOString() };
    clearProcess(status);
    const restart = policy === 'Always' || (policy === 'OnFailure' && !clean);
    this.deps.logs.event(name, clean ? 'WARN' : 'ERROR', `code-server ${how}${restart ? '' : ` (restartPolicy ${policy}: not restarting)`}`);
    if (!restart) {
      Object.assign(status, { phase: 'Failed' as Phase, reason: clean ? 'Exited' : 'Crashed', message: `code-server ${how}` });
      return undefined;
    }
    const now = Date.now();
    live.crashTimes = [...live.crashTimes.filter((t) => now - t < CRASH_WINDOW_MS), now];
    const attempts = live.crashTimes.length;
    const delay = Math.min(this.deps.config.editor.maxRestartBackoffSeconds * 1000, 1000 * 2 ** (attempts - 1));
    live.nextRestartAt = now + delay;
    status.restarts = (status.restarts ?? 0) + 1;
    if (attempts >= this.deps.config.editor.crashLoopRestarts) {
      Object.assign(status, {
        phase: 'Failed' as Phase,
        reason: 'CrashLoopBackOff',
        message: `code-server ${how}; ${attempts} crashes in ${CRASH_WINDOW_MS / 60_000} min, next start in ${Math.round(delay / 1000)} s`,
      });
    } else {
      Object.assign(status, { phase: 'Starting' as Phase, reason: 'BackOff', message: `code-server ${how}; restarting in ${Math.round(delay / 1000)} s` });
    }
    this.deps.logs.event(name, 'INFO', `restarting in ${Math.round(delay / 1000)} s (restartPolicy ${policy})`);
    return delay;
  }

  /** Writes status (and a new uid) when it changed, and updates the cache. */
  private async commit(record: ServerRecord, uid: string, status: EditorServerStatus): Promise<'ok' | 'gone'> {
    const server = record.server!;
    deriveConditions(status);
    const clean = JSON.parse(JSON.stringify(status)) as EditorServerStatus;
    const result = await this.deps.store.writeStatus(record.name, clean, uid);
    if (result === 'missing' || result === 'invalid') return 'gone';
    server.metadata.uid = uid;
    server.status = clean;
    this.setRecord(record);
    this.emit('changed', record.name);
    return 'ok';
  }

  private setRecord(record: ServerRecord): ServerRecord {
    const existing = this.records.get(record.name);
    const next = existing ?? record;
    next.server = record.server;
    next.problems = undefined;
    this.records.set(record.name, next);
    return next;
  }

  private live(name: string): Live {
    let live = this.lives.get(name);
    if (!live) {
      live = { healthy: false, crashTimes: [] };
      this.lives.set(name, live);
    }
    return live;
  }

  private log(message: string): void {
    (this.deps.log ?? console.log)(message);
  }
}

/** Clears the process fields of a status: no process runs. */
function clearProcess(status: EditorServerStatus): EditorServerStatus {
  status.pid = null;
  delete status.pidStartTicks;
  delete status.startTime;
  return status;
}
