// Keeping what every server declares, whatever its editor does: a server created and never
// started, an edit of a stopped one, a start or stop request. Each change the controller reports
// marks the server; marks are written together a second later (a create's several status commits
// make one write), and each write is one small object, skipped when the store already holds the
// same digest. At shutdown every server whose kept record is behind is written.
import { KeyedMutex } from '../core/mutex.ts';
import { parseManifest } from '../manifests/store.ts';
import type { DeclaredKey } from './catalog.ts';
import { declaredDigest, encodeDeclared, parseDeclared, type DeclaredRecord } from './declared.ts';
import { forEachLimited } from './limit.ts';
import { keptRecord, readApplied } from './service-records.ts';
import { describeError, type PersistenceDeps } from './service-types.ts';
import type { TargetStanding } from './target-standing.ts';
import { StoreError } from './types.ts';

/** Changes are written this long after the first of them: a burst (a create, a sync) becomes one write per server. */
export const COALESCE_MS = 1000;
/** Declared records written at once. */
const CONCURRENCY = 8;

export interface DeclaredDeps extends Pick<PersistenceDeps, 'engine' | 'store' | 'storage' | 'records' | 'log'> {
  /** True once the target has been looked at for servers to restore: nothing is written before. */
  discovered: () => boolean;
  standing: TargetStanding;
  backoffFor: (attempt: number) => number;
  now: () => number;
}

export interface DeclaredFlush {
  written: number;
  failed: string[];
}

export class DeclaredKeeper {
  readonly #deps: DeclaredDeps;
  /** Servers changed since their record was last written. */
  readonly #dirty = new Set<string>();
  /** The declared records the store holds of each server, oldest first (the last is current). */
  readonly #kept = new Map<string, DeclaredKey[]>();
  readonly #locks = new KeyedMutex();
  /** The settings each server's storage last said the controller applied: kept while reading them would start a workload. */
  readonly #applied = new Map<string, string | undefined>();
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<DeclaredFlush> | undefined;
  #failures = 0;
  #closed = false;
  /** Every server at the store was listed: a name not seeded has nothing there. */
  #allLooked = false;
  readonly counts = { written: 0 };

  constructor(deps: DeclaredDeps) {
    this.#deps = deps;
  }

  /** What the store holds of a server, from the first look at it. */
  seed(name: string, keys: readonly DeclaredKey[]): void {
    this.#kept.set(name, [...keys]);
  }

  /** Everything was listed: a name not seeded has no record at the store. */
  seededAll(): void {
    this.#allLooked = true;
    this.schedule();
  }

  /** The server changed (manifest, status, settings): its record is written within COALESCE_MS. */
  changed(name: string): void {
    if (this.#closed) return;
    this.#dirty.add(name);
    this.schedule();
  }

  /** The server was deleted on purpose: nothing more is written of it (its records stay, for an undelete, until purged). */
  forget(name: string): void {
    this.#dirty.delete(name);
    this.#applied.delete(name);
  }

  /** Servers whose record is still to be written. */
  get behind(): number {
    return this.#dirty.size;
  }

  schedule(delayMs = COALESCE_MS): void {
    if (this.#closed || this.#timer || this.#flushing || this.#dirty.size === 0 || !this.#deps.discovered()) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.flush();
    }, delayMs);
    this.#timer.unref();
  }

  /**
   * Writes the record of every marked server (with `all`, of every server there is: the final
   * write at shutdown, which also keeps a manifest the controller has not read yet). A server whose
   * store record is the same is skipped; one that failed stays marked, tried again with backoff.
   */
  async flush(options: { all?: boolean; signal?: AbortSignal } = {}): Promise<DeclaredFlush> {
    if (this.#flushing) await this.#flushing.catch(() => undefined);
    const run = this.#flush(options);
    this.#flushing = run;
    try {
      return await run;
    } finally {
      if (this.#flushing === run) this.#flushing = undefined;
      this.schedule(this.#failures > 0 ? this.#deps.backoffFor(this.#failures) : COALESCE_MS);
    }
  }

  async #flush({ all = false, signal }: { all?: boolean; signal?: AbortSignal }): Promise<DeclaredFlush> {
    const names = new Set(this.#dirty);
    this.#dirty.clear();
    if (all) for (const name of await this.#deps.store.list()) names.add(name);
    const result: DeclaredFlush = { written: 0, failed: [] };
    let storeFailed = false;
    await forEachLimited([...names], CONCURRENCY, async (name) => {
      try {
        if (await this.#locks.run(name, () => this.#write(name, all, signal))) result.written++;
      } catch (error) {
        this.#dirty.add(name);
        result.failed.push(`${name} (${describeError(error)})`);
        if (error instanceof StoreError) {
          storeFailed = true;
          this.#deps.standing.fails(error);
        } else {
          this.#deps.log(`persistence: the declared state of ${name} could not be kept: ${describeError(error)}`);
        }
      }
    });
    this.#failures = storeFailed ? this.#failures + 1 : 0;
    if (!storeFailed && result.written > 0) this.#deps.standing.works();
    this.counts.written += result.written;
    return result;
  }

  /** Writes one server's record when the store's differs; false when nothing was written (the same, gone, being deleted, no uid yet). */
  async #write(name: string, final: boolean, signal?: AbortSignal): Promise<boolean> {
    const record = await this.#read(name);
    if (!record) return false;
    const keys = await this.#keys(name, signal);
    // A manifest the controller has not given a uid yet is kept only at the last moment, and only
    // when nothing of it is kept: its uid comes with the next reconcile, and marks it again.
    if (record.uid === null && (!final || keys.length > 0)) return false;
    const digest = declaredDigest(record);
    if (keys.at(-1)?.digest === digest) return false;
    const key = await this.#deps.engine.putDeclared(name, digest, encodeDeclared(record), keys, signal);
    this.#kept.set(name, [key]);
    return true;
  }

  /** The record as it would be kept now; undefined when the server is gone or being deleted. */
  async #read(name: string): Promise<DeclaredRecord | undefined> {
    const { store, storage, records } = this.#deps;
    const manifestText = await store.textOf(name);
    if (manifestText === undefined) return undefined;
    // A delete under way: its last snapshot and the deletion mark say what becomes of it. (Parsed
    // only when the text can hold a mark: this runs for every change the controller reports.)
    if (manifestText.includes('deletionTimestamp')) {
      const read = parseManifest(name, manifestText);
      if (read.kind === 'ok' && read.server.metadata.deletionTimestamp) return undefined;
    }
    const server = records.get(name)?.server;
    const uid = server?.metadata.uid ?? null;
    // A stopped server on a cluster: its volume is reached only by starting a Pod, so what was read last stands.
    if (!storage.storageDeferred?.(name)) this.#applied.set(name, await readApplied(storage, name));
    const kept = keptRecord(this.#applied.get(name), server?.metadata.generation, server?.status);
    return { name, uid, at: new Date(this.#deps.now()).toISOString(), manifestText, kept };
  }

  /** The keys the store holds of the server: known from the first listing, else looked up once. */
  async #keys(name: string, signal?: AbortSignal): Promise<DeclaredKey[]> {
    if (this.#allLooked || this.#kept.has(name)) return this.#kept.get(name) ?? [];
    const keys = await this.#deps.engine.declaredOf(name, signal);
    this.seed(name, keys);
    return keys;
  }

  /** Reads the server's current record from the store; undefined when there is none or it cannot be used (said in the log). */
  async read(name: string, keys: readonly DeclaredKey[], signal?: AbortSignal): Promise<DeclaredRecord | undefined> {
    for (const key of [...keys].reverse()) {
      const bytes = await this.#deps.engine.getDeclared(key.key, signal);
      if (!bytes) continue;
      const parsed = parseDeclared(bytes, name);
      if ('record' in parsed) return parsed.record;
      this.#deps.log(`persistence: skipping the declared record ${key.key}: ${parsed.problem}`);
    }
    return undefined;
  }

  dispose(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
