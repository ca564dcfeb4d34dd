// The control loop: lists the manifests, adopts the editors already running, then watches the
// manifests' source (the folder, or a cluster's objects) and the runtime, and feeds names to a
// work queue whose workers call reconcile(name). It builds the reconcile's parts (parts.ts) and
// the Reconciler on them; readers see what it does through the index it writes (the ServerTable).
import type { ServerRecord } from '../index/records.ts';
import type { ServerTable } from '../index/server-table.ts';
import type { ManifestWatch } from '../manifests/source.ts';
import type { EditorServer } from '../manifests/types.ts';
import { describeRef, sameRef, type RunningEditor } from '../runtime/interface.ts';
import { adoptOrphan, loadIdentities, prime } from './adoption.ts';
import type { ReconcileContext, ReconcilerDeps } from './context.ts';
import { adoptEditor } from './ensure-process.ts';
import type { ServerIdentities } from './identity.ts';
import type { Operations } from './operations.ts';
import { followRuntime, reconcileContext } from './parts.ts';
import { WorkQueue, type Lane } from './queue.ts';
import { Reconciler } from './reconciler.ts';
import { stopForShutdown } from './supervision.ts';

/** The most names the periodic resync queues a second: its work is spread, never a burst. */
export const RESYNC_PER_SECOND = 50;

/**
 * The queue of names to reconcile, made before the parts that queue names (capacity, persistence,
 * the runtime's news) so none of them needs the controller: names added before the controller
 * starts wait, and its workers take them once it has loaded every uid and adopted the editors.
 */
export function reconcileQueue(workers: number, log: (message: string) => void = console.log): WorkQueue {
  return new WorkQueue(undefined, {
    workers,
    maxBackoffMs: 60_000,
    onError: (name, error, attempt) => log(`reconcile ${name} failed (attempt ${attempt}): ${(error as Error).stack ?? error}`),
    onTerminal: (name, error) => log(`server ${name} is Failed (${error.reason}): ${error.message}; not retried until its manifest's spec changes`),
  });
}

export interface ControllerOptions {
  /** What a reconcile acts through; its `enqueue` adds to `queue`. */
  deps: ReconcilerDeps;
  /** The index this controller writes. */
  table: ServerTable;
  /** The uid book (the index answers nameOfUid from it too). */
  identities: ServerIdentities;
  /** The queue, from reconcileQueue(). */
  queue: WorkQueue;
  /** The period of the full resync (every server looked at again), spread and jittered ±10 %. */
  resyncMs: number;
  stopGraceMs: number;
  log?: (message: string) => void;
}

export class Controller {
  readonly queue: WorkQueue;
  private readonly options: ControllerOptions;
  private readonly ctx: ReconcileContext;
  private readonly reconciler: Reconciler;
  private watch: ManifestWatch | undefined;
  /** How many reconciles of each name have started, so a caller can wait for a fresh one. */
  private readonly runs = new Map<string, number>();
  private resyncTimer: NodeJS.Timeout | undefined;
  /** The manifests' place (the folder's device and inode) when first listed. */
  private folder: string | undefined;
  private stopping = false;

  constructor(options: ControllerOptions) {
    this.options = options;
    this.queue = options.queue;
    this.ctx = reconcileContext(options.deps, options.table, options.identities);
    this.reconciler = new Reconciler(this.ctx);
    followRuntime(this.ctx);
  }

  /** The reconcile's parts, for the commands readers may give (commands.ts). */
  get parts(): ReconcileContext {
    return this.ctx;
  }

  /** Long work per server (extension installs, clones) under way outside the workers. */
  get operations(): Operations {
    return this.ctx.operations;
  }

  /** One reconcile, as the queue's worker runs it: counted, timed, and told to the index. */
  private async work(name: string) {
    const run = (this.runs.get(name) ?? 0) + 1;
    this.runs.set(name, run);
    let waiting = false;
    let failure: unknown;
    const began = performance.now();
    try {
      const result = await this.reconciler.reconcile(name);
      waiting = result?.waiting === true;
      return result;
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      // The seconds it took and what it threw (undefined when it did not) are for metrics.
      this.options.table.reconciled({ name, run, waiting, seconds: (performance.now() - began) / 1000, error: failure });
      if (!this.options.table.records.has(name)) this.runs.delete(name);
    }
  }

  /** Queues a reconcile of the server; `user` when someone waits on it (it goes ahead of background work). */
  enqueue(name: string, lane: Lane = 'background'): void {
    this.queue.add(name, lane);
  }

  async start(): Promise<void> {
    const { store } = this.options.deps;
    const { table } = this.options;
    for (const said of await store.prepare()) this.log(said);

    await loadIdentities(this.ctx);
    this.folder = await store.folderIdentity();

    // List first, so every recorded port is held before anything is allocated.
    const names = await store.list();
    const reads = await Promise.all(names.map((n) => store.read(n)));
    const servers = new Map(reads.flatMap((r) => (r.kind === 'ok' ? [[r.name, r.server] as const] : [])));
    const { adopted, orphans } = await this.adoptRunningEditors(new Set(names), servers);
    // Every uid is claimed and every running editor known: names queued so far may be worked off.
    this.queue.work((name) => this.work(name));

    this.watch = await store.watch({
      changed: (name) => this.queue.add(name),
      everything: () => void this.resync(),
      known: () => table.records.keys(),
    }, (message) => this.log(message));
    // List again now the watch is ready: a manifest written since the first listing has no event.
    const since = (await store.list()).filter((name) => !names.includes(name));
    // Running editors first: each is Starting from its adoption until its /healthz answers, so at
    // 10,000 servers they are not left behind every stopped one's first look.
    for (const name of new Set([...adopted, ...orphans, ...names, ...since])) this.queue.add(name);
    this.scheduleResync();
  }

  /**
   * The periodic resync, level-triggered's safety net and nothing more: every server is reconciled
   * when its manifest, its editor or a timer it asked for says so, so this only catches what an
   * event missed. Once a period (jittered, so replicas and restarts do not line up), the names are
   * queued RESYNC_PER_SECOND a second in the background lane: at 10,000 servers the work is spread
   * over minutes, and a person's action still goes first.
   */
  private scheduleResync(): void {
    if (this.stopping) return;
    const period = this.options.resyncMs * (0.9 + Math.random() * 0.2);
    this.resyncTimer = setTimeout(() => void this.spreadResync().finally(() => this.scheduleResync()), period);
    this.resyncTimer.unref();
  }

  private async spreadResync(): Promise<void> {
    const names = [...await this.knownNames()];
    for (let at = 0; at < names.length && !this.stopping; at += RESYNC_PER_SECOND) {
      for (const name of names.slice(at, at + RESYNC_PER_SECOND)) this.queue.add(name);
      if (at + RESYNC_PER_SECOND < names.length) await new Promise((resolve) => { this.resyncTimer = setTimeout(resolve, 1000); this.resyncTimer.unref(); });
    }
  }

  /** Every name with a file or a record. */
  private async knownNames(): Promise<Set<string>> {
    const names = new Set(await this.options.deps.store.list());
    for (const name of this.options.table.records.keys()) names.add(name);
    return names;
  }

  /** Re-lists the manifests and queues every name at once (the folder came back, the config changed). */
  async resync(): Promise<void> {
    for (const name of await this.knownNames()) this.queue.add(name);
  }

  /** Queues the name and resolves once a reconcile started after this call has finished (and not merely waited). */
  reconcileNow(name: string, timeoutMs = 30_000): Promise<void> {
    const { table } = this.options;
    const after = this.runs.get(name) ?? 0;
    return new Promise((resolve) => {
      // A run that only waited for news (an exit about to be reported) does not count.
      const off = table.on('reconciled', (done) => {
        if (done.name === name && done.run > after && !done.waiting) finish();
      });
      const finish = () => {
        clearTimeout(timer);
        off();
        resolve();
      };
      const timer = setTimeout(finish, timeoutMs);
      this.queue.add(name, 'user');
    });
  }

  /** Waits until the record satisfies the predicate, or the timeout passes. */
  waitFor(name: string, predicate: (record: ServerRecord | undefined) => boolean, timeoutMs: number): Promise<ServerRecord | undefined> {
    const { records } = this.options.table;
    const current = records.get(name);
    if (predicate(current)) return Promise.resolve(current);
    return new Promise((resolve) => {
      const off = this.options.table.on('changed', (changed) => {
        if (changed !== name) return;
        const record = records.get(name);
        if (predicate(record)) finish(record);
      });
      const finish = (record: ServerRecord | undefined) => {
        clearTimeout(timer);
        off();
        resolve(record);
      };
      const timer = setTimeout(() => finish(records.get(name)), timeoutMs);
    });
  }

  /**
   * Stops watching and reconciling. With stopEditors, the editors are stopped too and recorded
   * Stopped (ServiceShutdown), so the next start brings back what the manifests ask for.
   */
  async stop(options: { stopEditors?: boolean } = {}): Promise<void> {
    this.stopping = true;
    clearTimeout(this.resyncTimer);
    this.queue.stop();
    await this.watch?.close();
    // Reconciles under way finish first (within a bound), so nothing writes after stop returns.
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.options.stopGraceMs + 10_000)));
    await Promise.race([this.queue.idle(), bound]);
    clearTimeout(timer);
    // Long work outside the workers (extension installs) ends too; the next start resumes it.
    await this.ctx.operations.cancelAll('the service is stopping');
    if (options.stopEditors) {
      await Promise.all([...this.options.table.records.keys()].map((name) => stopForShutdown(this.ctx, name).catch((error) =>
        this.log(`stopping ${name} at shutdown failed: ${(error as Error).stack ?? error}`))));
    }
    this.options.deps.workload.dispose();
  }

  /**
   * Editors outlive the controller. Keep the one each manifest recorded (or, after a crash
   * between launch and status write, the one on its port) and stop the others a manifest has;
   * one whose manifest is missing is stopped only after the grace period, as for a file that
   * just went. Only editors the runtime says this service launched are ever found here. Returns the
   * names of those adopted, and of those without a manifest.
   */
  private async adoptRunningEditors(names: Set<string>, servers: Map<string, EditorServer>): Promise<{ adopted: string[]; orphans: string[] }> {
    const { workload } = this.options.deps;
    const adopted = new Map<string, RunningEditor>();
    const orphans = new Map<string, RunningEditor>();
    const extras: RunningEditor[] = [];
    const found = await workload.list();
    // Recorded references first, so a stray twin never wins over the recorded editor.
    found.sort((a, b) => Number(isRecorded(servers.get(b.name), b)) - Number(isRecorded(servers.get(a.name), a)));
    for (const editor of found) {
      const server = servers.get(editor.name);
      if (!names.has(editor.name)) {
        if (orphans.has(editor.name)) extras.push(editor);
        else orphans.set(editor.name, editor);
        continue;
      }
      if (!server) continue; // invalid manifest: leave its editor alone
      const port = server.spec.port ?? server.status?.port;
      const keep = !adopted.has(editor.name) && server.spec.running && !server.metadata.deletionTimestamp
        && (isRecorded(server, editor) || (editor.port !== undefined && editor.port === port));
      if (keep) adopted.set(editor.name, editor);
      else extras.push(editor);
    }
    // Servers with a running editor take their uid and port first: a copy of their manifest never does.
    for (const name of adopted.keys()) prime(this.ctx, servers.get(name)!, this.folder);
    for (const [name, server] of servers) if (!adopted.has(name)) prime(this.ctx, server, this.folder);
    for (const editor of adopted.values()) {
      const server = servers.get(editor.name)!;
      const owned = workload.adopt(editor.name, editor.ref, editor.port ?? server.spec.port ?? server.status?.port);
      if (!owned) continue; // gone since it was listed: the reconcile records how it ended
      adoptEditor(this.ctx, editor.name, editor.ref, owned.endpoint);
      this.log(`adopted running editor ${editor.name} (${describeRef(editor.ref)})`);
    }
    for (const editor of orphans.values()) {
      const owned = workload.adopt(editor.name, editor.ref, editor.port);
      if (owned) adoptOrphan(this.ctx, editor.name, editor.ref, owned.endpoint, editor.port, this.folder);
    }
    await Promise.all(extras.map((editor) => {
      this.log(`stopping editor ${describeRef(editor.ref)} (${editor.name}): no manifest wants it`);
      return workload.stop(editor.name, editor.ref, this.options.stopGraceMs);
    }));
    return { adopted: [...adopted.keys()], orphans: [...orphans.keys()] };
  }

  private log(message: string): void {
    (this.options.log ?? console.log)(message);
  }
}

function isRecorded(server: EditorServer | undefined, editor: RunningEditor): boolean {
  return sameRef(server?.status?.runtimeRef, editor.ref);
}
