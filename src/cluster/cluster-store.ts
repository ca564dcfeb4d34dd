// The manifests of a cluster: the EditorServer objects of one namespace, served straight from a
// list-then-watch cache (no copy on disk). Each object is read as the manifest a person could
// have written, so the controller runs over them exactly as over a folder (the same validation,
// the same rules for copies, forged status blocks and deletions). The objects are the truth:
//   - the cluster's side: the watch keeps the objects as last seen and tells the controller of
//     each that says something new or is gone; the echoes of the service's own writes are no news;
//   - the service's side: the API's creates, updates and deletion marks, and a GitOps mirror's
//     writes, go to the objects (resourceVersion-guarded), and the cache takes what they answer;
//   - status goes to the objects only through /status; the controller's status records (in the
//     data folder) are its own, and a status someone else wrote is put back. Commits that queue
//     behind a write in flight write only the latest, and an event older than the service's last
//     write is not taken for news: a transition costs one status write.
// A finalizer on every object asked to run makes `kubectl delete` a deliberate delete the
// controller carries out (editor, volume and objects gone) before the object goes; an object
// never asked to run has nothing on the cluster, and goes at once.
import { promises as fs } from 'node:fs';
import { parseDocument } from 'yaml';
import { sameData } from '../core/equal.ts';
import { KeyedMutex } from '../core/mutex.ts';
import type { ManifestEvents, ManifestWatch } from '../manifests/source.ts';
import { ConflictError, ManifestStore, parseManifest, type ManifestRead, type WriteResult } from '../manifests/store.ts';
import type { Document } from 'yaml';
import type { EditorServer, EditorServerStatus } from '../manifests/types.ts';
import { ListWatch } from '../runtime/kubernetes/list-watch.ts';
import { ApiRefusal, FINALIZER, type EditorServerObject, type EditorServers } from './editor-servers.ts';
import { addFinalizer, olderVersion, releaseObject } from './object-writes.ts';
import { manifestOf, manifestText, objectFor, objectUpdated, sameManifest } from './render.ts';

const MAX_ATTEMPTS = 5;

export interface ClusterStoreOptions {
  /** Where earlier versions kept a working copy of the objects (removed by prepare()). */
  dir: string;
  /** The controller's status records. */
  statusDir: string;
  api: EditorServers;
  log: (message: string) => void;
  /** The watch's re-list interval (default 5 minutes). */
  relistMs?: number;
}

export class ClusterManifestStore extends ManifestStore {
  readonly api: EditorServers;
  readonly #log: (message: string) => void;
  readonly #watch: ListWatch<EditorServerObject>;
  /** The objects as last seen, by name. */
  readonly #objects = new Map<string, EditorServerObject>();
  /** Each object's manifest and its text, made once per object seen. */
  readonly #manifests = new WeakMap<EditorServerObject, Record<string, unknown>>();
  readonly #texts = new WeakMap<EditorServerObject, string>();
  /** The manifest of the service's own last write of each object, so its watch event (which may come before the write's answer) is no news. */
  readonly #ours = new Map<string, Record<string, unknown>>();
  /** Names this service is creating an object for. */
  readonly #creating = new Set<string>();
  /** Names created here whose object the watch has not shown yet: a list from before the create does not take them out. */
  readonly #unseen = new Set<string>();
  /** Uids of objects whose server was deleted, kept by the API server until their finalizer goes: they are no manifest any more. */
  readonly #released = new Set<string>();
  /** One change of an object's finalizer or status at a time, per name. */
  readonly #sync = new KeyedMutex();
  readonly #pending = new Set<Promise<unknown>>();
  /** Names whose status could not be written (the API server away): the next sight of the object writes it. */
  readonly #unwritten = new Set<string>();
  /** The latest status the controller committed and nobody has written yet, by name. */
  readonly #wanted = new Map<string, EditorServerStatus>();
  /** The controller's watch, once it watches; until then the names with news wait in `#early`. */
  #events: ManifestEvents | undefined;
  readonly #early = new Set<string>();
  #trouble: string | undefined;

  constructor(options: ClusterStoreOptions) {
    super(options.dir, options.statusDir);
    this.api = options.api;
    this.#log = options.log;
    this.#watch = new ListWatch(options.api.transport(), {
      replace: (items) => this.#replaceAll(items),
      upsert: (object) => this.#upsert(object),
      remove: (object) => this.#removed(object),
      trouble: (error, delayMs) => {
        const message = `${error.message}${/not found|404/i.test(error.message) ? ' (is the EditorServer CRD installed? kubectl apply -f deploy/kubernetes/crd.yaml)' : ''}`;
        if (message !== this.#trouble) this.#log(`cluster manifests: watching the EditorServer objects of namespace ${options.api.namespace} failed: ${message}; again in ${Math.round(delayMs / 1000)} s`);
        this.#trouble = message;
      },
    }, options.relistMs !== undefined ? { relistMs: options.relistMs } : {});
  }

  /** Lists the objects (and brings their finalizers and status level); resolves once it has. */
  async start(): Promise<void> {
    this.#watch.start();
    await this.#watch.synced();
    await this.settled();
  }

  async close(): Promise<void> {
    await this.#watch.close();
    await this.settled();
  }

  /** Resolves once the work started by every object seen so far (finalizers, status put back) is done. */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
  }

  /** The object as last seen. */
  objectNamed(name: string): EditorServerObject | undefined {
    return this.#objects.get(name);
  }

  // --- The source: the objects as manifests (fileOf names the object, and so does describe) ---
  override fileOf(name: string): string {
    return this.api.describe(name);
  }

  override async list(): Promise<string[]> {
    const names: string[] = [];
    for (const [name, object] of this.#objects) if (this.#isManifest(object)) names.push(name);
    return names.sort();
  }

  override async exists(name: string): Promise<boolean> {
    return this.#objects.has(name);
  }

  override async readText(name: string): Promise<string | undefined> {
    const object = this.#objects.get(name);
    if (!object || !this.#isManifest(object)) return undefined;
    return this.#textOf(object);
  }

  /**
   * The object as a manifest, validated as a file is, with the controller's status and the
   * object's own generation. An object's status is taken over once, when the controller has none
   * of its own (a fresh data folder), and then validated with the rest.
   */
  override async read(name: string): Promise<ManifestRead> {
    const object = this.#objects.get(name);
    if (!object || !this.#isManifest(object)) return { kind: 'missing', name };
    const statuses = this.statuses!;
    const firstSight = object.status !== undefined && (await statuses.read(name)) === undefined;
    const read = parseManifest(name, firstSight ? manifestText(object, true) : this.#textOf(object), this.api.describe(name));
    if (read.kind !== 'ok') return read;
    await this.observe(read.server, statuses);
    if (object.metadata.generation !== undefined) read.server.metadata.generation = object.metadata.generation;
    return read;
  }

  /** The objects are always there to be read: a cluster away answers from the cache, and paused is never the word. */
  override async folderIdentity(): Promise<string | undefined> {
    return `cluster:${this.api.namespace}`;
  }

  /** Removes the working copy earlier versions kept; the objects are listed by start(). */
  override async prepare(): Promise<string[]> {
    if (!(await fs.stat(this.dir).then(() => true, () => false))) return [];
    await fs.rm(this.dir, { recursive: true, force: true });
    return [`removed ${this.dir}: the EditorServer objects are read from the cluster's watch, and no copy of them is kept`];
  }

  override async watch(events: ManifestEvents, _log?: (message: string) => void): Promise<ManifestWatch> {
    this.#events = events;
    for (const name of this.#early) events.changed(name);
    this.#early.clear();
    return { close: async () => { this.#events = undefined; } };
  }

  #isManifest(object: EditorServerObject): boolean {
    return !this.#released.has(object.metadata.uid ?? '');
  }

  #textOf(object: EditorServerObject): string {
    const text = this.#texts.get(object) ?? manifestText(object);
    this.#texts.set(object, text);
    return text;
  }

  #manifestOf(object: EditorServerObject): Record<string, unknown> {
    const made = this.#manifests.get(object) ?? manifestOf(object);
    this.#manifests.set(object, made);
    return made;
  }

  #news(name: string): void {
    if (this.#events) this.#events.changed(name);
    else this.#early.add(name);
  }

  // --- The service's writes ---

  /** Creates the object; false when an object of that name exists. The uid is the API server's. */
  override async create(server: EditorServer, onCreated?: () => void): Promise<boolean> {
    const name = server.metadata.name;
    if (this.#creating.has(name) || this.#objects.has(name)) return false;
    this.#creating.add(name);
    try {
      const created = await this.api.create(objectFor(server));
      if (!created) return false;
      this.#unseen.add(name);
      this.#objects.set(name, created);
      server.metadata.uid = created.metadata.uid;
      onCreated?.();
      return true;
    } finally {
      this.#creating.delete(name);
    }
  }

  /**
   * Changes the object's metadata or spec through the YAML document of its manifest, as the
   * file store does, and replaces the object only at the version it was read at (a change made
   * meanwhile is read again). A deletion mark asks the API server to delete the object: the
   * finalizer keeps it until the controller has deleted the server; an object without one (never
   * asked to run) goes at once, and the answer is 'missing'.
   */
  override async update(name: string, mutate: (doc: Document, server: EditorServer) => boolean | void): Promise<WriteResult> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const object = await this.api.get(name);
      if (!object) return 'missing';
      const text = manifestText(object);
      const read = parseManifest(name, text, this.api.describe(name));
      if (read.kind !== 'ok') return 'invalid';
      const doc = parseDocument(text, { uniqueKeys: false });
      if (mutate(doc, read.server) === false) return 'unchanged';
      const next = doc.toJS() as EditorServer;
      if (next.metadata.deletionTimestamp && !object.metadata.deletionTimestamp) {
        await this.api.delete(name, object.metadata.uid);
        // The cache says so at once; the watch's events follow.
        const now = await this.api.get(name);
        if (now && now.metadata.uid === object.metadata.uid) this.#objects.set(name, now);
        else if (this.#objects.get(name)?.metadata.uid === object.metadata.uid) this.#objects.delete(name);
        return now?.metadata.uid === object.metadata.uid ? 'updated' : 'missing';
      }
      if (sameManifest(object, next)) return 'unchanged';
      const put = await this.#put(object, next);
      if (put !== 'conflict') return put;
    }
    throw new ConflictError(`${this.api.describe(name)} kept changing while it was being written (${MAX_ATTEMPTS} attempts): try again`);
  }

  /**
   * A GitOps repository's manifest: the object is created or replaced with its metadata and spec.
   * A manifest that does not validate cannot be an object: 'invalid', and the object stays as it is.
   */
  override async replaceText(name: string, text: string): Promise<WriteResult | 'created'> {
    const read = parseManifest(name, text);
    if (read.kind !== 'ok') return 'invalid';
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const object = await this.api.get(name);
      if (!object) return (await this.create(read.server)) ? 'created' : 'unchanged';
      if (sameManifest(object, { ...read.server, metadata: { ...read.server.metadata, uid: object.metadata.uid } })) return 'unchanged';
      const put = await this.#put(object, read.server);
      if (put !== 'conflict') return put;
    }
    throw new ConflictError(`${this.api.describe(name)} kept changing while it was being written (${MAX_ATTEMPTS} attempts): try again`);
  }

  /** A manifest put back from the persistence target: its object is made unless one has that name (never replaced). */
  override async createText(name: string, text: string): Promise<boolean> {
    const read = parseManifest(name, text, this.api.describe(name));
    return read.kind === 'ok' ? this.create(read.server) : Promise.reject(new Error(`${this.api.describe(name)} cannot be made from the kept manifest: ${read.kind === 'invalid' ? read.errors.join('; ') : 'it is empty'}`));
  }

  /** Records the status, then writes it to the object through /status. */
  override async writeStatus(name: string, status: EditorServerStatus, uid?: string): Promise<WriteResult> {
    const result = await super.writeStatus(name, status, uid);
    if (result === 'missing' || result === 'invalid') return result;
    this.#wanted.set(name, status);
    // Commits queued behind a write in flight: the first to run writes the latest, the others nothing.
    await this.#sync.run(name, async () => {
      const latest = this.#wanted.get(name);
      this.#wanted.delete(name);
      if (latest) await this.#pushStatus(name, latest);
    });
    return result;
  }

  /** The server is deleted: its status record goes, then the finalizer, and with it the object. True when its object was there. */
  override async remove(name: string, serverUid?: string): Promise<boolean> {
    // The deleted server's own object: the uid the controller knows it by (an object made again
    // under the name meanwhile is another server's), else the object as last seen.
    const object = this.#objects.get(name);
    const uid = serverUid ?? (await this.statuses!.read(name))?.uid ?? object?.metadata.uid;
    if (uid !== undefined) this.#released.add(uid);
    await this.removeStatus(name);
    await releaseObject(this.api, name, uid);
    return object !== undefined;
  }

  /** Replaces the object's metadata and spec, only at the version read ('conflict' otherwise); its echo is no news. */
  async #put(object: EditorServerObject, server: EditorServer): Promise<'updated' | 'missing' | 'conflict'> {
    const name = object.metadata.name;
    let updated: EditorServerObject;
    const next = objectUpdated(object, server);
    this.#ours.set(name, manifestOf(next));
    try {
      updated = await this.api.replace(next);
    } catch (error) {
      if (error instanceof ApiRefusal && error.status === 409) return 'conflict';
      if (error instanceof ApiRefusal && error.status === 404) return 'missing';
      throw error;
    }
    const held = this.#objects.get(name);
    if (!held || held.metadata.uid !== updated.metadata.uid || !olderVersion(updated.metadata.resourceVersion, held.metadata.resourceVersion)) this.#objects.set(name, updated);
    return 'updated';
  }

  // --- The cluster's side ---

  #track(work: Promise<unknown>): void {
    const settled = work.catch((error) => this.#log(`cluster manifests: ${(error as Error).message}`)).finally(() => this.#pending.delete(settled));
    this.#pending.add(settled);
  }

  #replaceAll(items: EditorServerObject[]): void {
    this.#trouble = undefined;
    const names = new Set(items.map((item) => item.metadata.name));
    for (const item of items) this.#upsert(item);
    // Objects that are gone (deleted while the watch was away) are news too.
    for (const [name, object] of this.#objects) {
      if (names.has(name) || this.#unseen.has(name)) continue;
      this.#objects.delete(name);
      this.#forget(name, object);
    }
  }

  #upsert(object: EditorServerObject): void {
    const name = object.metadata?.name;
    if (typeof name !== 'string') return;
    // An event from before this service's own last write of the object (its finalizer, its
    // status): the event of that write follows with everything this one says.
    const held = this.#objects.get(name);
    if (held?.metadata.uid === object.metadata.uid && olderVersion(object.metadata.resourceVersion, held?.metadata.resourceVersion)) return;
    this.#objects.set(name, object);
    this.#unseen.delete(name);
    if (this.#creating.has(name)) return;
    // News for the controller when the manifest it reads changed: not for a status (its own, or
    // one it puts back below), a finalizer or a version.
    const manifest = this.#manifestOf(object);
    // The echo of the service's own write is seen once; whatever comes after is someone else's.
    const ours = this.#ours.get(name);
    this.#ours.delete(name);
    const echo = ours !== undefined && sameData(ours, manifest);
    const same = held?.metadata.uid === object.metadata.uid && sameData(this.#manifestOf(held!), manifest);
    if (!same && !echo) this.#news(name);
    this.#track(this.#sync.run(name, () => this.#level(name)));
  }

  #removed(object: EditorServerObject): void {
    const name = object.metadata?.name;
    if (typeof name !== 'string' || this.#creating.has(name)) return;
    const held = this.#objects.get(name);
    if (held && held.metadata.uid !== object.metadata.uid) return;
    this.#objects.delete(name);
    this.#forget(name, object);
  }

  /** An object gone: the controller hears of it (its status record stays until the controller lets the server go). */
  #forget(name: string, object: EditorServerObject): void {
    this.#unwritten.delete(name);
    this.#ours.delete(name);
    if (object.metadata.uid !== undefined) this.#released.delete(object.metadata.uid);
    this.#news(name);
  }

  /** Brings the object's finalizer and status level with what the controller holds. */
  async #level(name: string): Promise<void> {
    const object = this.#objects.get(name);
    if (!object || !this.#isManifest(object)) return;
    // The finalizer once the server is asked to run, before its editor makes anything on the
    // cluster: a server that never ran has nothing to clean up (and a sync of thousands of
    // stopped objects costs no write each).
    if (!object.metadata.deletionTimestamp && object.spec?.running === true && !object.metadata.finalizers?.includes(FINALIZER)) {
      const updated = await addFinalizer(this.api, object);
      if (updated && this.#objects.get(name)?.metadata.uid === updated.metadata.uid) this.#objects.set(name, updated);
    }
    // The controller's status is the status: one written by anyone else is put back.
    const status = (await this.statuses!.read(name))?.status;
    if (status && !sameData(object.status ?? null, status)) {
      if (object.status !== undefined && !this.#unwritten.has(name)) this.#log(`cluster manifests: the status of ${this.api.describe(name)} was not the controller's (written by someone else?): put back`);
      await this.#pushStatus(name, status);
    }
  }

  async #pushStatus(name: string, status: EditorServerStatus): Promise<void> {
    const object = this.#objects.get(name);
    if (!object || sameData(object.status ?? null, status)) return;
    try {
      const written = await this.api.setStatus(name, status);
      this.#unwritten.delete(name);
      const latest = this.#objects.get(name);
      // Only the status is new (the rest stays as the watch last showed it), at the version the write made.
      const resourceVersion = written.metadata?.resourceVersion ?? latest?.metadata.resourceVersion;
      if (latest) this.#objects.set(name, { ...latest, metadata: { ...latest.metadata, resourceVersion }, status: written.status ?? status });
    } catch (error) {
      // Gone meanwhile, or the API server away: the next sight of the object writes it again.
      if (error instanceof ApiRefusal && error.status === 404) return;
      this.#unwritten.add(name);
      this.#log(`cluster manifests: ${(error as Error).message}; written at the next sight of the object`);
    }
  }
}
