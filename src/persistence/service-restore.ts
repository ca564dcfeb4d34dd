// Bringing servers back from the target: at start, every server the target holds and this data
// folder has no record of (a fresh container) — manifests first, then each one's files while the
// gate holds it, so its editor starts only once they are back; an undelete; a chosen snapshot put
// back into a stopped server. Local files newer than the snapshot are kept (the engine's rule),
// and a manifest that is there is never replaced.
import { promises as fs } from 'node:fs';
import { extensionName } from '../extensions/extensions-folder.ts';
import { parseManifest } from '../manifests/store.ts';
import { describeError, fromSnapshot, isDeleted, type PersistenceDeps, type ServerPersistence } from './service-types.ts';
import { filesOptions, putBack, rootsOf, writeAppliedOnce, type KeptRecord } from './service-records.ts';
import type { RestoreGate } from './restore-gate.ts';
import type { KeptServer } from './engine.ts';
import { forEachLimited } from './limit.ts';
import type { DeclaredKeeper } from './service-declared.ts';
import type { TargetStanding } from './target-standing.ts';
import { FilesUnavailable, StoreError, type RestoreResult, type SnapshotInfo } from './types.ts';

/** Servers looked at, and put back, at once when the service starts. */
const DISCOVERY_CONCURRENCY = 8;

/** Why files are restored: a fresh container, an undelete, or a snapshot someone chose. */
export type RestoreReason = 'start' | 'undelete' | 'chosen';

export interface RestorerDeps extends PersistenceDeps {
  gate: RestoreGate;
  /** Aborted when the service stops. */
  signal: AbortSignal;
  /** Runs `work` when the server's snapshot or restore under way has ended. */
  serial<T>(name: string, work: () => Promise<T>): Promise<T>;
  setState(name: string, change: Partial<ServerPersistence>): void;
  standing: TargetStanding;
  counted(ok: boolean): void;
  /** Queues another attempt at restoring the server's files after `delayMs`. */
  retryLater(name: string, reason: RestoreReason, delayMs: number): void;
  backoffFor(attempt: number): number;
  /** What the target holds of each server's declared state. */
  declared: DeclaredKeeper;
  /** The target holds a snapshot of the server's files under this uid. */
  filesKept(name: string, uid: string): void;
}

/** What a server is put back from (Restorer.#choose). */
interface Chosen {
  name: string;
  uid: string;
  manifestText: string;
  kept: KeptRecord;
  /** The snapshot its files come from; none when no snapshot of this uid was kept. */
  filesFrom: SnapshotInfo | undefined;
  /** Where it came from, in words. */
  from: string;
}

export class Restorer {
  /** True once the target has been looked at for servers to restore: no snapshot is taken before. */
  discovered = false;
  readonly #deps: RestorerDeps;
  /** Manifests there at the first look whose server this data folder has no record of (kept in git, say). */
  #fresh: Set<string> | undefined;
  /** Servers already put back by an earlier, interrupted look. */
  readonly #planned = new Set<string>();
  /** The snapshot each server's files come from, while they are to be restored. */
  readonly #pending = new Map<string, string>();
  /** The settings sidecar a server was put back with, written with its files (when its storage could not be reached before). */
  readonly #applied = new Map<string, string>();
  readonly #failures = new Map<string, number>();

  constructor(deps: RestorerDeps) {
    this.#deps = deps;
  }

  /** Looks at the target for servers this data folder lacks, puts back their manifests and records, and queues their files. */
  async discover(): Promise<void> {
    const { store, engine, gate } = this.#deps;
    if (!this.#fresh) {
      this.#fresh = new Set();
      for (const name of await store.list()) if (!(await exists(store.statusFileOf(name)))) this.#fresh.add(name);
    }
    let servers: Awaited<ReturnType<typeof engine.servers>>;
    try {
      servers = await engine.servers();
      this.#deps.standing.works();
    } catch (error) {
      if (error instanceof StoreError) this.#deps.standing.fails(error);
      // A server whose files the target may hold does not start empty meanwhile.
      for (const name of this.#fresh) gate.failed(name, `waiting for the persistence target, which may hold this server's files: ${describeError(error)}`);
      throw error;
    }
    const restoring: string[] = [];
    const fresh = this.#fresh;
    // Several at once: each is two reads at the target (its declared record and its latest index).
    await forEachLimited(servers, DISCOVERY_CONCURRENCY, async (server) => {
      if (isDeleted(server)) return;
      const { name, latest } = server;
      if (latest) {
        this.#deps.setState(name, fromSnapshot(latest));
        this.#deps.filesKept(name, latest.uid);
      }
      this.#deps.declared.seed(name, server.declared);
      const manifestThere = await exists(store.fileOf(name));
      const known = !fresh.has(name) && (await exists(store.statusFileOf(name)));
      if (known || this.#planned.has(name)) return;
      gate.restoring(name, latest ? `restoring ${latest.files} files from snapshot ${latest.id}` : 'restoring its manifest');
      const chosen = await this.#choose(server);
      if (!chosen) return void gate.release(name);
      const created = await putBack(store, this.#deps.layout, this.#deps.storage, {
        ...chosen,
        uidTaken: (uid) => [...this.#deps.records.values()].some((r) => r.name !== name && r.server?.metadata.uid === uid),
      }, !manifestThere);
      this.#keepApplied(name, chosen);
      if (created) this.#deps.log(`persistence: put back ${store.fileOf(name)} from ${chosen.from}`);
      this.#planned.add(name);
      restoring.push(name);
      if (chosen.filesFrom) {
        this.#pending.set(name, chosen.filesFrom.id);
        this.#deps.retryLater(name, 'start', 0);
      } else {
        // Declared and never kept with files (created, never populated): nothing more to bring back.
        gate.restored(name, `its manifest from ${chosen.from}; no files were kept of it`);
      }
      this.#deps.enqueue(name);
    });
    restoring.sort();
    // Held while the target did not answer, and it holds nothing of them to restore: they go on as they are.
    for (const name of this.#fresh) if (!this.#planned.has(name)) gate.release(name);
    this.discovered = true;
    this.#deps.declared.seededAll();
    if (restoring.length > 0) this.#deps.log(`persistence: restoring ${restoring.length} server${restoring.length === 1 ? '' : 's'} from ${this.#deps.target}: ${restoring.join(', ')}`);
  }

  /** Restores the server's files (the latest snapshot, or the one chosen); the gate holds the server meanwhile. */
  restoreFiles(name: string, options: { snapshotId?: string; reason: RestoreReason; retrying?: boolean }): Promise<RestoreResult> {
    const { gate, engine, storage, signal } = this.#deps;
    const snapshotId = options.snapshotId ?? this.#pending.get(name);
    const which = snapshotId === undefined ? 'the latest snapshot' : `snapshot ${snapshotId}`;
    gate.restoring(name, `restoring files from ${which}`);
    this.#deps.enqueue(name);
    return this.#deps.serial(name, async () => {
      this.#deps.setState(name, { in_progress: 'restore' });
      const began = performance.now();
      try {
        // The server's folders (on a cluster, a copy of its volume, put back by the commit).
        const files = await storage.openForRestore(name, filesOptions(this.#deps, signal)).catch((error: unknown) => {
          throw signal.aborted ? error : new FilesUnavailable(name, 'read', error);
        });
        let result: RestoreResult;
        try {
          // A snapshot chosen on purpose is put back whole; otherwise newer local files are kept.
          result = await engine.restore(name, {
            ...(snapshotId === undefined ? {} : { snapshotId }), roots: rootsOf(files), signal, overwriteNewer: options.reason === 'chosen',
          });
          this.#deps.standing.works();
          await files.commit(signal).catch((error: unknown) => {
            throw signal.aborted ? error : new FilesUnavailable(name, 'write', error);
          });
        } finally {
          await files.release();
        }
        await this.#settingsApplied(name, result);
        await this.#installExtras(name, result.extensions);
        this.#deps.metrics?.restore((performance.now() - began) / 1000);
        this.#deps.counted(true);
        this.#deps.setState(name, { ...fromSnapshot(result.snapshot), in_progress: null, last_error: null });
        this.#failures.delete(name);
        this.#pending.delete(name);
        this.#applied.delete(name);
        const message = restoredMessage(result);
        this.#deps.log(`persistence: ${name}: restored ${message}`);
        gate.restored(name, message);
        this.#deps.enqueue(name);
        return result;
      } catch (error) {
        this.#deps.counted(false);
        this.#deps.metrics?.restoreFailed();
        if (error instanceof StoreError) this.#deps.standing.fails(error);
        this.#deps.setState(name, { in_progress: null, last_error: describeError(error) });
        if (options.reason === 'chosen' || signal.aborted) {
          // Asked for by someone, who is told: the server is not held.
          gate.release(name);
          this.#deps.enqueue(name);
          throw error;
        }
        const attempt = (this.#failures.get(name) ?? 0) + 1;
        this.#failures.set(name, attempt);
        const delay = this.#deps.backoffFor(attempt);
        gate.failed(name, `restoring files from ${which} failed: ${describeError(error)}; trying again in ${Math.max(1, Math.round(delay / 1000))} s`);
        this.#deps.log(`persistence: ${name}: restoring files from ${which} failed (attempt ${attempt}): ${describeError(error)}`);
        if (!options.retrying) this.#deps.retryLater(name, options.reason, delay);
        throw error;
      }
    });
  }

  /** Brings a deleted server back: manifest and records first (the delete unmarked), then its files. */
  /** `admit` sees the manifest that would come back first, and throws to refuse it (the API's access check). */
  async undelete(entry: KeptServer & { latest: SnapshotInfo }, admit?: (manifestText: string) => void): Promise<void> {
    const { name, latest } = entry;
    const { gate, engine, store } = this.#deps;
    const message = `bringing back ${latest.files} files from snapshot ${latest.id}`;
    gate.restoring(name, message);
    let chosen: Chosen | undefined;
    try {
      chosen = await this.#choose(entry);
      if (!chosen) throw new Error(`nothing of ${name} could be read at the target`);
      admit?.(chosen.manifestText);
      await engine.unmarkDeleted(name);
      const created = await putBack(store, this.#deps.layout, this.#deps.storage, {
        ...chosen,
        uidTaken: (uid) => [...this.#deps.records.values()].some((r) => r.server?.metadata.uid === uid),
      }, true);
      this.#keepApplied(name, chosen);
      if (!created) throw new Error(`${store.fileOf(name)} appeared meanwhile: it is left as it is`);
    } catch (error) {
      gate.release(name);
      throw error;
    }
    this.#deps.log(`persistence: ${name} undeleted from ${chosen.from}`);
    if (!chosen.filesFrom) {
      gate.restored(name, `its manifest from ${chosen.from}; no files were kept of it`);
      this.#deps.enqueue(name);
      return;
    }
    this.#pending.set(name, chosen.filesFrom.id);
    this.#deps.enqueue(name);
    await this.restoreFiles(name, { snapshotId: chosen.filesFrom.id, reason: 'undelete' });
  }

  /**
   * What a server comes back as: its declared record or its latest snapshot's manifest and status,
   * whichever was read last; files only from a snapshot of the same uid (a server created again
   * under a deleted one's name never gets the old one's files). Undefined when nothing is readable.
   */
  async #choose(server: KeptServer): Promise<Chosen | undefined> {
    const { engine, signal } = this.#deps;
    const { name, latest } = server;
    const declared = await this.#deps.declared.read(name, server.declared, signal);
    const kept = latest ? await engine.restore(name, { snapshotId: latest.id, roots: [], signal }) : undefined;
    const useDeclared = declared && (!kept || declared.uid !== kept.snapshot.uid || Date.parse(declared.at) >= Date.parse(kept.snapshot.createdAt));
    if (useDeclared) {
      const uid = declared.uid ?? '';
      const filesFrom = latest && uid !== '' && latest.uid === uid ? latest : undefined;
      return { name, uid, manifestText: declared.manifestText, kept: declared.kept, filesFrom, from: `its declared record of ${declared.at}` };
    }
    if (!kept) return undefined;
    return { name, uid: kept.snapshot.uid, manifestText: kept.manifestText, kept: (kept.status ?? {}) as KeptRecord, filesFrom: kept.snapshot, from: `snapshot ${kept.snapshot.id}` };
  }

  /** Those of `servers` whose manifest as it would come back `admits` (read a few at a time; one that cannot be read is asked as undefined). */
  async admitted<T extends KeptServer>(servers: T[], admits: (name: string, manifestText: string | undefined) => boolean): Promise<T[]> {
    const shown: T[] = [];
    await forEachLimited(servers, 4, async (server) => {
      const text = await this.#choose(server).then((chosen) => chosen?.manifestText, () => undefined);
      if (admits(server.name, text)) shown.push(server);
    });
    return shown.sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Keeps the sidecar a server was put back with for the restore of its files, when putting it back could not write it. */
  #keepApplied(name: string, chosen: Chosen): void {
    const text = chosen.kept.settingsApplied;
    if (text !== undefined && this.#deps.storage.storageDeferred?.(name)) this.#applied.set(name, text);
  }

  /** What the controller last wrote into settings.json, so a key the user changed stays theirs. */
  async #settingsApplied(name: string, result: RestoreResult): Promise<void> {
    const text = this.#applied.get(name) ?? (result.status as KeptRecord | null)?.settingsApplied;
    if (typeof text === 'string') await writeAppliedOnce(this.#deps.storage, name, text);
  }

  /** Extensions the editor had that its spec does not name (installed inside the editor): installed again, one by one. */
  async #installExtras(name: string, ids: string[]): Promise<void> {
    const { storage, gate, logs, signal, store } = this.#deps;
    // The manifest as it is now (the controller may not have read it yet): its extensions are the controller's to install.
    const text = await store.textOf(name);
    const read = text === undefined ? undefined : parseManifest(name, text);
    const spec = read?.kind === 'ok' ? read.server.spec : undefined;
    const groups = this.#deps.config().extensionGroups;
    const wanted = new Set([
      ...(spec?.extensionGroups ?? []).flatMap((g) => (Object.hasOwn(groups, g) ? groups[g].extensions : [])),
      ...(spec?.extensions ?? []),
    ].map(extensionName));
    const present = await storage.installedExtensions(name);
    const extras = [...new Set(ids.map(extensionName))].filter((id) => !wanted.has(id) && !present.has(id));
    for (const [i, id] of extras.entries()) {
      gate.restoring(name, `installing extension ${id} (${i + 1} of ${extras.length}), which the editor had`);
      const outcome = await storage.installExtension(name, id, signal);
      if (outcome.cancelled || signal.aborted) throw signal.reason ?? new Error('cancelled');
      logs.event(name, outcome.ok ? 'INFO' : 'WARN', outcome.ok ? `extension ${id} installed again after the restore` : `extension ${id}, which the editor had, could not be installed again: ${outcome.message}`);
    }
  }
}

/** "42 files from snapshot …; 2 newer local files kept; 1 corrupted file not restored: a/b". */
function restoredMessage(result: RestoreResult): string {
  const parts = [`${result.files} files from snapshot ${result.snapshot.id}`];
  if (result.keptNewer.length > 0) parts.push(`${result.keptNewer.length} newer local file${result.keptNewer.length === 1 ? '' : 's'} kept`);
  if (result.corrupted.length > 0) {
    parts.push(`${result.corrupted.length} corrupted file${result.corrupted.length === 1 ? '' : 's'} not restored: ${result.corrupted.slice(0, 5).join(', ')}${result.corrupted.length > 5 ? ', …' : ''}`);
  }
  return parts.join('; ');
}

async function exists(path: string | undefined): Promise<boolean> {
  if (path === undefined) return false;
  return fs.lstat(path).then(() => true, () => false);
}
