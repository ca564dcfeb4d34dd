// The manifests of a cluster: the EditorServer objects of one namespace, kept as a working copy
// of manifest files in the data folder, so the controller runs over them exactly as it runs over
// a manifests folder (the same validation, the same rules for copies, forged status blocks and
// deletions). The objects are the truth:
//   - the cluster's side: a list-then-watch loop writes each object's manifest into the working
//     copy when it says something new (a `kubectl apply`, a GitOps tool, another replica), and
//     takes it out when the object is gone; its writes are foreign to the controller, which sees
//     them as edits;
//   - the service's side: the API's creates, updates and deletion marks, and a GitOps mirror's
//     writes, go to the objects first (resourceVersion-guarded), then to the working copy;
//   - status goes to the objects only through the /status subresource, with observedGeneration
//     in the objects' own generations; a status someone else wrote is put back. Writes are
//     coalesced: commits that queue behind one another write only the latest, and a watch event
//     older than the object as last written (its own status write's) is not taken for news, so
//     a transition costs one status write.
// A finalizer on every object asked to run makes `kubectl delete` a deliberate delete the
// controller carries out (editor, volume and objects gone) before the object goes; an object
// never asked to run has nothing on the cluster, and goes at once.
import { promises as fs } from 'node:fs';
import { parseDocument } from 'yaml';
import { sameData } from '../core/equal.ts';
import { KeyedMutex } from '../core/mutex.ts';
import { ConflictError, ManifestStore, parseManifest, type ManifestRead, type WriteResult } from '../manifests/store.ts';
import type { Document } from 'yaml';
import type { EditorServer, EditorServerStatus } from '../manifests/types.ts';
import { ListWatch } from '../runtime/kubernetes/list-watch.ts';
import { ApiRefusal, FINALIZER, type EditorServerObject, type EditorServers } from './editor-servers.ts';
import { manifestText, objectFor, objectUpdated, sameManifest } from './render.ts';

const MAX_ATTEMPTS = 5;

export interface ClusterStoreOptions {
  /** The working copy's folder (in the data folder: never a person's manifests folder). */
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
  /** Writes the working copy for the cluster's side: a writer of its own, so the controller's store sees its writes as edits. */
  readonly #copies: ManifestStore;
  readonly #watch: ListWatch<EditorServerObject>;
  /** The objects as last seen, by name. */
  readonly #objects = new Map<string, EditorServerObject>();
  /** Names this service is creating an object for: their working copy is written by the create. */
  readonly #creating = new Set<string>();
  /** Names created here whose object the watch has not shown yet: a list from before the create does not take them out. */
  readonly #unseen = new Set<string>();
  /** One change of the working copy (and of an object's status) at a time, per name. */
  readonly #sync = new KeyedMutex();
  readonly #pending = new Set<Promise<unknown>>();
  /** Names whose status could not be written (the API server away): the next sight of the object writes it. */
  readonly #unwritten = new Set<string>();
  /** The latest status the controller committed and nobody has written yet, by name. */
  readonly #wanted = new Map<string, EditorServerStatus>();
  #trouble: string | undefined;

  constructor(options: ClusterStoreOptions) {
    super(options.dir, options.statusDir);
    this.api = options.api;
    this.#log = options.log;
    this.#copies = new ManifestStore(options.dir);
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

  /** Lists the objects and brings the working copy level with them; resolves once it is. */
  async start(): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true });
    this.#watch.start();
    await this.#watch.synced();
    await this.settled();
  }

  async close(): Promise<void> {
    await this.#watch.close();
    await this.settled();
  }

  /** Resolves once the working copy has caught up with every object seen so far. */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
  }

  /** The object as last seen. */
  objectNamed(name: string): EditorServerObject | undefined {
    return this.#objects.get(name);
  }

  /** The manifest, with the object's own generation while the working copy says what the object says. */
  override async read(name: string): Promise<ManifestRead> {
    const read = await super.read(name);
    const object = this.#objects.get(name);
    if (read.kind === 'ok' && object?.metadata.generation !== undefined && sameData(object.spec ?? null, read.server.spec ?? null)) {
      read.server.metadata.generation = object.metadata.generation;
    }
    return read;
  }

  /** Creates the object, then its working copy; false when an object of that name exists. The uid is the API server's. */
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
      // A stale copy of that name (an object deleted while this service was away) gives way.
      await this.#sync.run(name, () => this.#copies.remove(name));
      return await super.create(server, onCreated);
    } finally {
      this.#creating.delete(name);
    }
  }

  /**
   * Changes the object's metadata or spec through the YAML document of its manifest, as the
   * file store does, and replaces the object only at the version it was read at (a change made
   * meanwhile is read again). A deletion mark asks the API server to delete the object: the
   * finalizer keeps it until the controller has deleted the server.
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
        // The working copy says so at once; the object's own mark follows through the watch.
        await this.#sync.run(name, () => super.update(name, mutate));
        return 'updated';
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

  /** Snapshots restore manifests into a folder; in a cluster the objects are the manifests, and work lives in volumes. */
  override async createText(name: string, _text: string): Promise<boolean> {
    throw new Error(`${this.api.describe(name)}: manifests are not restored from snapshots when the EditorServer objects are the manifests`);
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

  /** The server is deleted: its working copy and status record go, then the finalizer, and with it the object. */
  override async remove(name: string): Promise<boolean> {
    const read = await super.read(name);
    const uid = read.kind === 'ok' ? read.server.metadata.uid : this.#objects.get(name)?.metadata.uid;
    const removed = await this.#sync.run(name, () => super.remove(name));
    await this.#release(name, uid);
    return removed;
  }

  /**
   * Replaces the object's metadata and spec with the manifest's, only at the version it was read
   * at, then the working copy (the controller's own write, as with a file); 'conflict' when the
   * object changed meanwhile.
   */
  async #put(object: EditorServerObject, server: EditorServer): Promise<'updated' | 'missing' | 'conflict'> {
    const name = object.metadata.name;
    let updated: EditorServerObject;
    try {
      updated = await this.api.replace(objectUpdated(object, server));
    } catch (error) {
      if (error instanceof ApiRefusal && error.status === 409) return 'conflict';
      if (error instanceof ApiRefusal && error.status === 404) return 'missing';
      throw error;
    }
    this.#objects.set(name, updated);
    await this.#sync.run(name, () => super.replaceText(name, manifestText(updated)));
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
    for (const name of this.#objects.keys()) if (!names.has(name) && !this.#unseen.has(name)) this.#objects.delete(name);
    // Copies of objects that are gone (deleted while this service was away) go too.
    this.#track((async () => {
      for (const name of await this.#copies.list()) {
        if (!this.#objects.has(name) && !this.#creating.has(name) && !this.#unseen.has(name)) await this.#sync.run(name, () => this.#dropCopy(name));
      }
    })());
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
    this.#track(this.#sync.run(name, () => this.#level(name)));
  }

  #removed(object: EditorServerObject): void {
    const name = object.metadata?.name;
    if (typeof name !== 'string' || this.#creating.has(name)) return;
    if (this.#objects.get(name)?.metadata.uid !== object.metadata.uid && this.#objects.has(name)) return;
    this.#objects.delete(name);
    this.#unwritten.delete(name);
    this.#track(this.#sync.run(name, () => this.#dropCopy(name)));
  }

  /** Brings the working copy (and the object's finalizer and status) level with the object as last seen. */
  async #level(name: string): Promise<void> {
    const object = this.#objects.get(name);
    if (!object) return;
    // The finalizer once the server is asked to run, before its editor makes anything on the
    // cluster: a server that never ran has nothing to clean up (and a sync of thousands of
    // stopped objects costs no write each).
    if (!object.metadata.deletionTimestamp && object.spec?.running === true && !object.metadata.finalizers?.includes(FINALIZER)) await this.#addFinalizer(object);
    const text = await this.#copies.textOf(name);
    const copy = text === undefined ? undefined : parseDocument(text, { uniqueKeys: false }).toJS();
    if (!sameManifest(object, copy)) {
      // A status is taken over from the object only when the controller has none of its own (a fresh data folder).
      const firstSight = !(await fs.stat(this.statusFileOf(name)!).then(() => true, () => false));
      await this.#copies.replaceText(name, manifestText(object, firstSight));
    }
    // The controller's status is the status: one written by anyone else is put back.
    const read = await super.read(name);
    const status = read.kind === 'ok' ? read.server.status : undefined;
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

  async #addFinalizer(object: EditorServerObject): Promise<void> {
    try {
      const updated = await this.api.replace({ ...object, metadata: { ...object.metadata, finalizers: [...(object.metadata.finalizers ?? []), FINALIZER] } });
      if (this.#objects.get(object.metadata.name)?.metadata.uid === updated.metadata.uid) this.#objects.set(object.metadata.name, updated);
    } catch (error) {
      // Changed meanwhile: the watch shows the change, and the finalizer is added then.
      if (!(error instanceof ApiRefusal && (error.status === 409 || error.status === 404))) throw error;
    }
  }

  /** Takes out the working copy of an object that is gone (its status record stays until the controller lets the server go). */
  async #dropCopy(name: string): Promise<void> {
    if (this.#objects.has(name)) return;
    await this.#copies.remove(name);
  }

  /** Removes the finalizer from the server's object (only that object: one made again under its name is left alone), deleting it first if nobody has. */
  async #release(name: string, uid: string | undefined): Promise<void> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const object = await this.api.get(name);
      if (!object || (uid !== undefined && object.metadata.uid !== uid)) return;
      if (!object.metadata.deletionTimestamp) await this.api.delete(name, object.metadata.uid);
      const finalizers = (object.metadata.finalizers ?? []).filter((f) => f !== FINALIZER);
      if (finalizers.length === (object.metadata.finalizers ?? []).length) return;
      try {
        await this.api.replace({ ...object, metadata: { ...object.metadata, finalizers } });
        return;
      } catch (error) {
        if (error instanceof ApiRefusal && error.status === 404) return;
        if (!(error instanceof ApiRefusal && error.status === 409)) throw error;
      }
    }
    throw new ConflictError(`${this.api.describe(name)} kept changing while its finalizer was being removed: it is removed at the next try`);
  }
}

/**
 * True when resource version `a` is known to be older than `b`. Versions are opaque to clients;
 * every Kubernetes API server backed by etcd makes them increasing integers, and anything else
 * is taken as news (never older).
 */
function olderVersion(a: string | undefined, b: string | undefined): boolean {
  return a !== undefined && b !== undefined && /^\d+$/.test(a) && /^\d+$/.test(b) && BigInt(a) < BigInt(b);
}
