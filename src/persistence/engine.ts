// The snapshot engine: incremental snapshots of servers into a SnapshotStore, restores, and the
// store's housekeeping (retention, deletion marks, purge, garbage collection). One snapshot or
// restore per server at a time; every store request goes through one bounded, retrying client.
import { KeyedMutex } from '../core/mutex.ts';
import { Catalog } from './catalog.ts';
import { HASH_FALLBACK_REASON } from './hash.ts';
import { collectGarbage } from './garbage.ts';
import { DEFAULT_JOURNAL_LIMITS, Journals, type JournalLimits } from './journal.ts';
import type { DeclaredKey } from './catalog.ts';
import { assertServerName, declaredKey, deletedMarkKey, indexKey, nextSnapshotId, timeOfId } from './keys.ts';
import { forEachLimited } from './limit.ts';
import { IndexCache } from './local-cache.ts';
import type { AfterRead } from './read-file.ts';
import { restoreSnapshot, type RestoreContext } from './restore.ts';
import { takeSnapshot, type SnapshotContext } from './snapshots.ts';
import { StoreClient } from './store-client.ts';
import { sharedPool, type WorkPool } from './work-pool.ts';
import type { RestoreResult, SnapshotInfo, SnapshotRoot, SnapshotSources, SnapshotStore } from './types.ts';

export interface EngineOptions {
  store: SnapshotStore;
  /** A local folder of the engine's own (e.g. <data>/persistence): the last index per server, to skip hashing unchanged files. Losing it only costs time. */
  cacheDir: string;
  /** Store requests in flight at once, across all servers (default 8). */
  concurrency?: number;
  /** Target pack size (default 8 MiB). */
  packBytes?: number;
  /** Files below are packed together (default 1 MiB); larger ones are objects of their own. */
  smallFileBytes?: number;
  /** Largest object a file is cut into (default packBytes): bounds memory, and the size of one request. */
  chunkBytes?: number;
  /** Committed snapshots kept per server (default 10; older indexes deleted after a commit). */
  keepSnapshots?: number;
  /** A snapshot reads and hashes in worker threads, and a restore checks and writes in them, when the files to read or write add up to this many bytes or more (default 16 MiB); below, on the event loop's thread in short slices. */
  parallelMinBytes?: number;
  /** The worker threads (default: the process's, one per core up to 4, stopped after 30 s without work). */
  pool?: WorkPool;
  /** Pauses before retrying a transient store failure; its length is the number of retries (default [250, 1000]). */
  retryDelaysMs?: number[];
  /** Unreferenced objects younger than this are kept by garbage collection (default 1 hour). */
  garbageMinAgeMs?: number;
  now?: () => number;
  log?: (message: string) => void;
  /** Change journals (inotify) of the roots of running servers, so an incremental snapshot reads only what changed (default on; false: every snapshot walks every folder). */
  journal?: boolean | Partial<JournalLimits>;
  /** Test seam: runs after a file's bytes are read, before they are checked for changes. */
  afterRead?: AfterRead;
}

/** A server the store holds something of (SnapshotEngine.servers). */
export interface KeptServer {
  name: string;
  uid: string;
  latest?: SnapshotInfo;
  declared: DeclaredKey[];
  deletedAt?: string;
}

const MiB = 1024 * 1024;
const DAY_MS = 24 * 60 * 60 * 1000;

export class SnapshotEngine {
  private readonly client: StoreClient;
  private readonly catalog: Catalog;
  private readonly cache: IndexCache;
  private readonly snapshotContext: SnapshotContext;
  private readonly restoreContext: RestoreContext;
  private readonly now: () => number;
  private readonly log: (message: string) => void;
  private readonly garbageMinAgeMs: number;
  private readonly locks = new KeyedMutex();
  private readonly journals: Journals | undefined;

  constructor(options: EngineOptions) {
    this.now = options.now ?? Date.now;
    this.log = options.log ?? (() => undefined);
    if (HASH_FALLBACK_REASON) this.log(`snapshots hash files with BLAKE2b: the BLAKE3 binding could not load (${HASH_FALLBACK_REASON})`);
    const packBytes = options.packBytes ?? 8 * MiB;
    const parallelMinBytes = options.parallelMinBytes ?? 16 * MiB;
    const pool = () => options.pool ?? sharedPool();
    const concurrency = options.concurrency ?? 8;
    this.client = new StoreClient(options.store, {
      concurrency, uploadBudgetBytes: (concurrency + 2) * packBytes, retryDelaysMs: options.retryDelaysMs ?? [250, 1000], log: this.log,
    });
    this.catalog = new Catalog(this.client, this.log);
    this.cache = new IndexCache(options.cacheDir, this.log);
    this.garbageMinAgeMs = options.garbageMinAgeMs ?? 60 * 60 * 1000;
    this.journals = options.journal === false ? undefined : new Journals({ ...DEFAULT_JOURNAL_LIMITS, ...(options.journal === true ? {} : options.journal) }, this.log);
    this.snapshotContext = {
      client: this.client, catalog: this.catalog, cache: this.cache, journals: this.journals,
      settings: {
        packBytes,
        smallFileBytes: options.smallFileBytes ?? MiB,
        chunkBytes: options.chunkBytes ?? packBytes,
        keepSnapshots: options.keepSnapshots ?? 10,
        readAttempts: 3,
        parallelMinBytes,
        pool,
        racyMs: 1000,
        now: this.now,
        log: this.log,
        afterRead: options.afterRead,
      },
    };
    this.restoreContext = { client: this.client, catalog: this.catalog, cache: this.cache, log: this.log, parallelMinBytes, pool };
  }

  /** Takes an incremental snapshot; when nothing differs from the latest (files, manifest text, status, extensions), writes nothing and returns it with unchanged: true. One snapshot per server at a time (a second call waits for the first). */
  snapshot(sources: SnapshotSources, reason: string, signal?: AbortSignal): Promise<{ snapshot: SnapshotInfo; unchanged: boolean }> {
    return this.exclusive(sources.name, () => takeSnapshot(this.snapshotContext, sources, reason, signal));
  }

  /** Stops the change journal of a server's roots (deleted, or its editor stopped). */
  stopWatching(name: string): void {
    this.journals?.forget(name);
  }

  /** The change journals of a server's roots: folders watched, walks served from them and full walks. */
  journalState(name: string): ReturnType<Journals['state']> {
    return this.journals?.state(name) ?? [];
  }

  /** Stops every change journal; the engine still works, walking every folder. */
  close(): void {
    this.journals?.close();
  }

  /** Committed snapshots of a server, newest first ([] when none). */
  async list(name: string): Promise<SnapshotInfo[]> {
    assertServerName(name);
    const { ids } = await this.catalog.server(name);
    return this.catalog.list(name, ids);
  }

  /**
   * Restores a snapshot (the latest when no id) into the given roots: missing files are written, a
   * local file newer than the snapshot is kept (keptNewer; unless overwriteNewer), others replaced;
   * stored content is checked against its hash (corrupted: reported, not written, the rest
   * restored). With no roots it only reads the snapshot's manifest, status and extensions.
   */
  restore(name: string, options: { snapshotId?: string; roots: SnapshotRoot[]; signal?: AbortSignal; overwriteNewer?: boolean }): Promise<RestoreResult> {
    return this.exclusive(name, () => restoreSnapshot(this.restoreContext, name, options));
  }

  /**
   * Every server the store holds snapshots or a declared record of: its latest snapshot (none when
   * it never had its files kept), its declared records (oldest first), deletedAt when marked
   * deleted. `uid` is the latest snapshot's ('' without one: the declared record says).
   */
  async servers(): Promise<KeptServer[]> {
    const found: KeptServer[] = [];
    await forEachLimited([...await this.catalog.servers()], this.client.concurrency, async ([name, server]) => {
      let latest: SnapshotInfo | undefined;
      for (const id of [...server.ids].reverse()) if ((latest = await this.catalog.info(name, id))) break;
      if (!latest && server.declared.length === 0) return;
      const deletedAt = server.marked ? await this.deletedAt(name) : undefined;
      found.push({ name, uid: latest?.uid ?? '', ...(latest && { latest }), declared: server.declared, ...(deletedAt !== undefined && { deletedAt }) });
    });
    return found.sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * Puts a server's declared record under a new key after `replaces` (the keys it supersedes,
   * removed once it is durable: a write cut short leaves both, and the newest is read). One small
   * put, whatever the size of the workspace.
   */
  async putDeclared(name: string, digest: string, body: Buffer, replaces: readonly DeclaredKey[], signal?: AbortSignal): Promise<DeclaredKey> {
    assertServerName(name);
    const id = nextSnapshotId(this.now(), replaces.at(-1)?.id);
    const key = declaredKey(name, id, digest);
    await this.client.put(key, body, signal);
    await forEachLimited(replaces, this.client.concurrency, (old) => this.client.delete(old.key, signal));
    return { key, id, digest };
  }

  /** A declared record's bytes; undefined when it is gone. */
  getDeclared(key: string, signal?: AbortSignal): Promise<Buffer | undefined> {
    return this.client.get(key, signal);
  }

  /** The declared records the store holds of a server, oldest first. */
  async declaredOf(name: string, signal?: AbortSignal): Promise<DeclaredKey[]> {
    assertServerName(name);
    return (await this.catalog.server(name, signal)).declared;
  }

  async markDeleted(name: string, at: Date): Promise<void> {
    assertServerName(name);
    await this.client.put(deletedMarkKey(name), Buffer.from(JSON.stringify({ deletedAt: at.toISOString() })));
  }

  async unmarkDeleted(name: string): Promise<void> {
    assertServerName(name);
    await this.client.delete(deletedMarkKey(name));
  }

  /**
   * Removes every server marked deleted more than retainDays ago: its snapshots and declared
   * records from before the mark, then the mark (snapshots taken since, of a server created again under the name, stay).
   * Its objects go with garbage collection. Returns their names.
   */
  async purgeDeleted(retainDays: number): Promise<string[]> {
    const cutoff = this.now() - retainDays * DAY_MS;
    const purged: string[] = [];
    for (const [name, server] of await this.catalog.servers()) {
      if (!server.marked) continue;
      const deletedAt = await this.deletedAt(name);
      const markedMs = deletedAt === undefined ? NaN : Date.parse(deletedAt);
      if (!(markedMs <= cutoff)) continue;
      await this.exclusive(name, async () => {
        const { ids, declared } = await this.catalog.server(name);
        const old = ids.filter((id) => (timeOfId(id) ?? Infinity) <= markedMs);
        await forEachLimited(old, this.client.concurrency, async (id) => {
          await this.client.delete(indexKey(name, id));
          this.catalog.forget(name, id);
        });
        const oldDeclared = declared.filter((d) => (timeOfId(d.id) ?? Infinity) <= markedMs);
        await forEachLimited(oldDeclared, this.client.concurrency, (d) => this.client.delete(d.key));
        await this.client.delete(deletedMarkKey(name));
        if (old.length === ids.length) await this.cache.remove(name);
      });
      this.log(`purged the snapshots of ${name}, deleted on ${deletedAt}`);
      purged.push(name);
    }
    return purged;
  }

  /** Deletes objects no index refers to and older than an hour (a snapshot in progress is safe). */
  collectGarbage(): Promise<{ removed: number; bytes: number }> {
    return collectGarbage({ client: this.client, catalog: this.catalog, now: this.now, log: this.log, minAgeMs: this.garbageMinAgeMs });
  }

  /** The mark's time; undefined when it is gone or unreadable (then never purged, and said in the log). */
  private async deletedAt(name: string): Promise<string | undefined> {
    const bytes = await this.client.get(deletedMarkKey(name));
    if (!bytes) return undefined;
    try {
      const { deletedAt } = JSON.parse(bytes.toString('utf8'));
      if (typeof deletedAt === 'string' && Number.isFinite(Date.parse(deletedAt))) return deletedAt;
    } catch {
      // reported below
    }
    this.log(`the deletion mark of ${name} is damaged: it is kept, and the server never purged, until it is removed`);
    return undefined;
  }

  /** Runs `work` after every earlier call for the same server has settled. */
  private exclusive<T>(name: string, work: () => Promise<T>): Promise<T> {
    return this.locks.run(name, work);
  }
}
