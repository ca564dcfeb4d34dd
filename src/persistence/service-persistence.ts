// Work that outlives the machine, as the service runs it: when each server is snapshotted (its
// workspace first populated, its editor stopped, every intervalSeconds while it runs and
// something changed, on request, at shutdown), every declared change kept as it happens
// (service-declared.ts), what comes back when a fresh container starts (service-restore.ts),
// deleted servers kept for persistence.retainDeletedDays, and what the records, the health page
// and /metrics show. The snapshots themselves are the engine's (engine.ts); this file only decides when.
import type { PersistenceHooks, RestoreState } from '../controller/ensure-restored.ts';
import { TerminalError, WorkQueue } from '../controller/queue.ts';
import { apiError } from '../core/error-catalogue.ts';
import { KeyedMutex } from '../core/mutex.ts';
import type { KeptServer } from './engine.ts';
import { RecordStates } from './record-states.ts';
import { RestoreGate } from './restore-gate.ts';
import { DeclaredKeeper } from './service-declared.ts';
import { withSources } from './service-records.ts';
import { populatedMark, WorkspaceMarks } from './workspace-marks.ts';
import { finalSnapshots } from './service-shutdown.ts';
import { TargetStanding } from './target-standing.ts';
import { Restorer, type RestoreReason } from './service-restore.ts';
import {
  answer, describeError, fromSnapshot, isDeleted, type PersistenceDeps, type ServerPersistence, type ShutdownSummary,
} from './service-types.ts';
import { StoreError, type RestoreResult, type SnapshotInfo, type SnapshotStore } from './types.ts';

export type { PersistenceDeps, ServerPersistence, ShutdownSummary, SnapshotEngineApi } from './service-types.ts';

/** A delete waits this long for the server's last snapshot, then goes on without it. */
const DELETE_SNAPSHOT_MS = 10_000;
const HOUR_MS = 3600_000;
const SNAPSHOT_REASONS = ['shutdown', 'delete', 'stop', 'api', 'created', 'interval'];

export class PersistenceService implements PersistenceHooks {
  readonly gate = new RestoreGate();
  /** The target's store itself, for what is kept beside the snapshots (the audit trail's files); set by openPersistence. */
  targetStore: SnapshotStore | undefined;
  readonly #deps: PersistenceDeps;
  readonly #restorer: Restorer;
  readonly #declared: DeclaredKeeper;
  /** Which populated workspaces the target holds as they are: one that changed is snapshotted, running or not. */
  readonly #marks = new WorkspaceMarks();
  #unsubscribe: (() => void) | undefined;
  readonly #states = new RecordStates();
  /** Background work by key (`snapshot:<name>`, `restore:<name>`, `mark:<name>`), retried with capped backoff. */
  readonly #queue: WorkQueue;
  /** Why each queued snapshot is taken; names whose last background snapshot is still owed. */
  readonly #reasons = new Map<string, { reason: string; seq: number }>();
  #seq = 0;
  /** Deletion marks still to be written, with the time of each delete (written at shutdown at the latest). */
  readonly #deletions = new Map<string, number>();
  /** One snapshot or restore per server at a time. */
  readonly #chains = new KeyedMutex();
  readonly #lifetime = new AbortController();
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #standing: TargetStanding;
  #lastGcAt = 0;
  #closing = false;
  readonly #counts = { snapshots: 0, unchanged: 0, snapshot_failures: 0, restores: 0, restore_failures: 0, deleted: 0 };

  constructor(deps: PersistenceDeps) {
    this.#deps = deps;
    this.#standing = new TargetStanding(deps.target, deps.log, () => this.#now());
    this.#queue = new WorkQueue((key) => this.#work(key), {
      workers: 3, baseBackoffMs: deps.retry.initialMs, maxBackoffMs: deps.retry.maxMs,
      onError: (key, error, attempt) => this.#failedAgain(key, error, attempt),
      onTerminal: () => undefined,
    });
    this.#declared = new DeclaredKeeper({
      ...deps,
      discovered: () => this.#restorer.discovered,
      standing: this.#standing,
      backoffFor: (attempt) => this.#queue.backoffFor(attempt),
      now: () => this.#now(),
    });
    this.#restorer = new Restorer({
      ...deps, gate: this.gate, signal: this.#lifetime.signal,
      declared: this.#declared,
      filesKept: (name, uid) => this.#marks.keptUid(name, uid),
      serial: (name, work) => this.#serial(name, work),
      setState: (name, change) => this.#states.update(name, change),
      standing: this.#standing,
      counted: (ok) => (ok ? this.#counts.restores++ : this.#counts.restore_failures++),
      retryLater: (name, reason, delayMs) => this.#queue.addAfter(`restore:${reason}:${name}`, delayMs),
      backoffFor: (attempt) => this.#queue.backoffFor(attempt),
    });
  }

  /**
   * Before the controller starts: brings back the servers the target holds and this data folder
   * lacks (manifests first, then their files, each held by the gate until done). A target that
   * does not answer within `boundMs` is tried again in the background while the service serves.
   */
  async start(boundMs = 30_000): Promise<void> {
    const discovery = this.#restorer.discover().then(() => this.#afterDiscovery(), (error) => {
      this.#failedAgain('discover', error, 1);
      this.#queue.addAfter('discover', this.#queue.backoffFor(1));
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([discovery, new Promise((resolve) => (timer = setTimeout(resolve, boundMs)))]);
    clearTimeout(timer);
    this.#unsubscribe = this.#deps.onChanged?.((name) => this.changed(name));
    this.#after(HOUR_MS, () => this.#queue.add('purge'), true);
    this.#queue.add('purge');
    this.#scheduleInterval();
  }

  // --- The PersistenceService API (REST routes sit on these) ---

  /** Takes a snapshot of the server now (POST /servers/{id}/snapshot); throws with the store's hint when it fails. */
  async snapshot(name: string, reason = 'api'): Promise<SnapshotInfo> {
    this.#known(name);
    if (this.gate.holds(name)) throw apiError('SERVER_RESTORING', `server ${name} is being restored: take a snapshot once its Restored condition is True`);
    const result = await answer(this.#serial(name, () => this.#take(name, reason, this.#lifetime.signal)));
    if (!result) throw apiError('NOTHING_TO_SNAPSHOT', { name });
    return result.snapshot;
  }

  /** The change journals of a server's folders (watched while its editor runs; none once it stopped). */
  journalState(name: string): Array<{ root: string; watching: number; patched: number; full: number }> {
    return this.#deps.engine.journalState?.(name) ?? [];
  }

  /** The server's snapshots, newest first. */
  async list(name: string): Promise<SnapshotInfo[]> {
    return answer(this.#standing.call(() => this.#deps.engine.list(name)));
  }

  /** Restores a chosen snapshot (the latest by default) into a stopped server; 409 when its editor runs. */
  async restoreInto(name: string, snapshotId?: string): Promise<RestoreResult> {
    const server = this.#known(name);
    const phase = server.status?.phase ?? 'Pending';
    const running = [...this.#deps.running()].includes(name);
    if (running || !['Stopped', 'Failed', 'Pending'].includes(phase)) {
      throw apiError('SERVER_NOT_STOPPED', { name, phase });
    }
    if (this.gate.holds(name)) throw apiError('SERVER_RESTORING', `server ${name} is being restored already`);
    return answer(this.#restorer.restoreFiles(name, { snapshotId, reason: 'chosen' }));
  }

  /** Servers deleted within persistence.retainDeletedDays, whose snapshots are kept: each can be undeleted; given `admits`, those whose kept manifest it admits. */
  async deleted(admits?: (name: string, manifestText: string | undefined) => boolean): Promise<Array<KeptServer & { deletedAt: string; latest: SnapshotInfo }>> {
    const servers = await answer(this.#standing.call(() => this.#deps.engine.servers()));
    const kept = servers.filter((s): s is KeptServer & { deletedAt: string; latest: SnapshotInfo } => isDeleted(s) && s.latest !== undefined);
    return admits ? this.#restorer.admitted(kept, admits) : kept;
  }

  /** Brings a deleted server back: its manifest as it was (without the deletion mark), then its files; the delete is forgotten. */
  async undelete(name: string, admit?: (manifestText: string) => void): Promise<void> {
    const entry = (await this.deleted()).find((s) => s.name === name);
    if (!entry) throw apiError('NOT_DELETED', { name, days: this.#deps.config().persistence.retainDeletedDays });
    if (this.#deps.records.has(name) || (await this.#deps.store.textOf(name)) !== undefined) {
      throw apiError('NAME_TAKEN', `a server named ${name} exists: delete it, or rename its manifest, before bringing the deleted one back`);
    }
    await answer(this.#restorer.undelete(entry, admit));
  }

  /** The server's record field `persistence`; the same object until it changes. */
  stateOf(name: string): ServerPersistence {
    return this.#states.of(name);
  }

  /** Calls `listener(name)` when a server's persistence state changed; returns its removal. */
  onChange(listener: (name: string) => void): () => void {
    return this.#states.onChange(listener);
  }

  /** The health page's `persistence` section. */
  health(): Record<string, unknown> {
    const error = this.#standing.error;
    const restoring = this.gate.held().length;
    const { snapshots, unchanged, snapshot_failures, restores, restore_failures, deleted } = this.#counts;
    return {
      target: this.#deps.target,
      state: error ? 'failing' : restoring > 0 ? 'restoring' : 'ok',
      last_error: error?.message ?? null,
      hint: error?.hint ?? null,
      last_success_at: this.#standing.lastSuccessAt,
      interval_seconds: this.#deps.config().persistence.intervalSeconds,
      restoring,
      // Since the service started; declared_behind: servers changed since their declared state was kept (within a second or two).
      counts: { snapshots, unchanged, snapshot_failures, restores, restore_failures, deleted, declared_written: this.#declared.counts.written },
      declared_behind: this.#declared.behind,
    };
  }

  /** Problems of the health page: a failing target makes the service "degraded". */
  problems(): string[] {
    return this.#standing.problems();
  }

  /** At shutdown, within `deadlineMs`: declared states behind, deletion marks owed, and the final snapshots of every server running, owed one, or never kept. */
  async snapshotAll(reason: string, deadlineMs: number): Promise<ShutdownSummary> {
    const began = performance.now();
    this.#closing = true;
    const unkept = [...this.#deps.records.values()].filter((r) => this.#marks.owed(r.name, r.server)).map((r) => r.name);
    const names = [...new Set([...this.#deps.running(), ...this.#reasons.keys(), ...unkept])].filter((name) => !this.gate.holds(name) && this.#deps.records.has(name));
    return finalSnapshots({
      names, began, deadlineMs, lifetime: this.#lifetime,
      take: (name) => this.#serial(name, () => this.#take(name, reason, this.#lifetime.signal)).then((result) => {
        this.#reasons.delete(name);
        return result;
      }),
      declared: () => (this.#restorer.discovered ? this.#declared.flush({ all: true, signal: this.#lifetime.signal }) : undefined),
      // A delete the target has not heard of yet would bring the server back after a redeploy.
      marks: () => Promise.all([...this.#deletions.keys()].map((name) => this.#mark(name).then(() => undefined, (error) => `deletion mark of ${name} (${describeError(error)})`))),
    });
  }

  /** The controller reported a change of the server (manifest, status, settings): its declared state is kept, and a workspace just made or populated is snapshotted. */
  changed(name: string): void {
    this.#declared.changed(name);
    const record = this.#deps.records.get(name);
    if (record && this.#restorer.discovered && !this.gate.holds(name) && this.#marks.owed(name, record.server, true)) this.#enqueueSnapshot(name, 'created');
  }

  /** The target has been looked at: changes reported meanwhile are acted on. */
  #afterDiscovery(): void {
    for (const name of this.#deps.records.keys()) this.changed(name);
  }

  /** Stops timers and background work (a snapshot under way is abandoned: the previous one stays current). */
  async dispose(): Promise<void> {
    this.#closing = true;
    this.#unsubscribe?.();
    this.#declared.dispose();
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    this.#queue.stop();
    if (!this.#lifetime.signal.aborted) this.#lifetime.abort(new Error('the service is stopping'));
    this.gate.releaseAll();
    // Aborted work ends at once; the wait is bounded, so a shutdown stays within the platform's 15 s.
    await Promise.race([this.#queue.idle(), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
    this.#states.dispose();
    this.#deps.engine.close?.();
  }

  // --- Hooks the controller calls ---

  restoreState(name: string): RestoreState | undefined {
    return this.gate.stateOf(name);
  }

  restoreRecorded(name: string): void {
    this.gate.recorded(name);
  }

  stopped(name: string): void {
    this.#enqueueSnapshot(name, 'stop');
  }

  async deleting(name: string): Promise<void> {
    if (this.#closing || this.gate.holds(name) || !this.#restorer.discovered) return;
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Error(`it took longer than ${DELETE_SNAPSHOT_MS / 1000} s`)), DELETE_SNAPSHOT_MS);
    try {
      await this.#serial(name, () => this.#take(name, 'delete', AbortSignal.any([abort.signal, this.#lifetime.signal])));
    } catch (error) {
      this.#deps.log(`persistence: the last snapshot of ${name} before its delete failed (${describeError(error)}): an undelete brings back its snapshot before`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A deliberate delete finished: the server's snapshots are kept retainDeletedDays, then purged. */
  serverDeleted(name: string): void {
    this.#deps.engine.stopWatching?.(name);
    this.#declared.forget(name);
    this.#marks.forget(name);
    for (const map of [this.#reasons, this.#states]) map.delete(name);
    this.gate.release(name);
    this.#deletions.set(name, this.#now());
    this.#queue.add(`mark:${name}`);
  }

  // --- Inside ---

  /** Takes one snapshot now (inside the server's chain); undefined when there is nothing to take it of. */
  async #take(name: string, reason: string, signal: AbortSignal): Promise<{ snapshot: SnapshotInfo; unchanged: boolean } | undefined> {
    const server = this.#deps.records.get(name)?.server;
    const mark = server && populatedMark(server);
    const began = performance.now();
    try {
      const opening = () => this.#states.update(name, { in_progress: 'snapshot' });
      const result = await withSources(this.#deps, name, signal, opening, (sources) => this.#deps.engine.snapshot(sources, reason, signal));
      if (!result) return undefined;
      this.#standing.works();
      const seconds = (performance.now() - began) / 1000;
      this.#deps.metrics?.snapshot(seconds, result.unchanged ? 0 : result.snapshot.uploadedBytes);
      if (result.unchanged) this.#counts.unchanged++;
      else this.#counts.snapshots++;
      this.#states.update(name, { ...fromSnapshot(result.snapshot), last_error: null, in_progress: null });
      this.#marks.taken(name, result.snapshot.uid, mark);
      return result;
    } catch (error) {
      this.#counts.snapshot_failures++;
      this.#deps.metrics?.snapshotFailed();
      if (error instanceof StoreError) this.#standing.fails(error);
      this.#states.update(name, { last_error: describeError(error), in_progress: null });
      throw error;
    }
  }

  #enqueueSnapshot(name: string, reason: string): void {
    if (this.#closing) return;
    const queued = this.#reasons.get(name)?.reason;
    // The weightier reason names the snapshot (a stop over an interval); a new request is a new seq, so a run under way leaves it owed.
    const weightier = queued === undefined || SNAPSHOT_REASONS.indexOf(reason) < SNAPSHOT_REASONS.indexOf(queued) ? reason : queued;
    this.#reasons.set(name, { reason: weightier, seq: ++this.#seq });
    this.#queue.add(`snapshot:${name}`);
  }

  /** One piece of background work; a throw is retried with capped backoff (a TerminalError is not). */
  async #work(key: string): Promise<void> {
    const [kind, ...rest] = key.split(':');
    const name = rest.at(-1)!;
    if (kind === 'discover') return this.#restorer.discover().then(() => this.#afterDiscovery());
    if (kind === 'purge') return void (await this.purgeDeleted());
    if (kind === 'restore') return void (await this.#restorer.restoreFiles(name, { reason: rest[0] as RestoreReason, retrying: true }));
    if (kind === 'mark') return this.#mark(name);
    // A snapshot: none before the target has been looked at for servers to restore (an empty
    // workspace must never become a server's latest snapshot), none of a server being restored.
    const owed = this.#reasons.get(name);
    const settle = () => this.#reasons.get(name)?.seq === owed?.seq && this.#reasons.delete(name);
    if (owed === undefined || !this.#deps.records.has(name)) return void settle();
    if (!this.#restorer.discovered || this.gate.holds(name)) throw new Error(`${name} waits for its restore`);
    try {
      await this.#serial(name, () => this.#take(name, owed.reason, this.#lifetime.signal));
      settle();
    } catch (error) {
      // Only a store that fails is worth retrying; a workspace over the limit stays so until it changes.
      if (!(error instanceof StoreError)) {
        settle();
        this.#deps.log(`persistence: no snapshot of ${name}: ${describeError(error)}`);
        throw new TerminalError('SnapshotFailed', describeError(error));
      }
      throw error;
    }
  }

  /** Writes the deletion mark of a server deleted on purpose, unless it was written already. */
  async #mark(name: string): Promise<void> {
    const at = this.#deletions.get(name);
    if (at === undefined) return;
    await this.#standing.call(() => this.#deps.engine.markDeleted(name, new Date(at)));
    if (this.#deletions.get(name) === at) this.#deletions.delete(name);
    this.#counts.deleted++;
    this.#deps.log(`persistence: ${name} is deleted; its snapshots are kept ${this.#deps.config().persistence.retainDeletedDays} days, in which it can be undeleted`);
  }

  /** Removes the snapshots of servers deleted more than retainDeletedDays ago (hourly and at start), then unreferenced objects now and then; the names purged. */
  async purgeDeleted(): Promise<string[]> {
    const purged = await this.#standing.call(() => this.#deps.engine.purgeDeleted(this.#deps.config().persistence.retainDeletedDays));
    if (purged.length > 0) this.#deps.log(`persistence: removed the snapshots of ${purged.join(', ')}, deleted more than ${this.#deps.config().persistence.retainDeletedDays} days ago`);
    if (purged.length > 0 || this.#now() - this.#lastGcAt >= 24 * HOUR_MS) {
      await this.#standing.call(() => this.#deps.engine.collectGarbage());
      this.#lastGcAt = this.#now();
    }
    return purged;
  }

  /** Every intervalSeconds (read each time: an edit applies), each running server is snapshotted if something changed. */
  #scheduleInterval(): void {
    this.#after(this.#deps.config().persistence.intervalSeconds * 1000, () => {
      for (const name of this.#deps.running()) this.#enqueueSnapshot(name, 'interval');
      this.#scheduleInterval();
    });
  }

  /** A background step failed: said once (restores and refused snapshots say so themselves), retried with backoff. */
  #failedAgain(key: string, error: unknown, attempt: number): void {
    if (error instanceof StoreError) this.#standing.fails(error);
    if (attempt > 1 || key.startsWith('restore:') || (key.startsWith('snapshot:') && !(error instanceof StoreError))) return;
    const what = { discover: 'looking for servers to restore', purge: 'removing servers deleted long ago', mark: 'marking a server deleted', snapshot: 'a snapshot' }[key.split(':')[0]] ?? key;
    this.#deps.log(`persistence: ${what} (${key}) failed: ${describeError(error)}; tried again with backoff, at most every ${Math.round(this.#deps.retry.maxMs / 1000)} s`);
  }

  #serial<T>(name: string, work: () => Promise<T>): Promise<T> {
    return this.#chains.run(name, work);
  }

  #known(name: string) {
    const server = this.#deps.records.get(name)?.server;
    if (!server) throw apiError('SERVER_NOT_FOUND', `no server is named ${name}: list the servers with GET /servers`);
    return server;
  }

  #now(): number {
    return this.#deps.now?.() ?? Date.now();
  }

  /** Runs `fn` after `ms`, and again every `ms` with `repeat`; dispose clears it. */
  #after(ms: number, fn: () => void, repeat = false): void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      fn();
      if (repeat) this.#after(ms, fn, true);
    }, ms).unref();
    this.#timers.add(timer);
  }
}

