// An in-memory API server for EditorServer objects, with the rules the cluster store relies on:
// resourceVersion-guarded replaces (409), generation moved by spec changes only, status only
// through setStatus, finalizers holding a delete (deletionTimestamp) until the last goes, and a
// watch that tells every change. Anyone (a test playing kubectl) can change objects behind the store.
import { sameData } from '../../src/core/equal.ts';
import { ApiRefusal, type EditorServerObject, type EditorServers } from '../../src/cluster/editor-servers.ts';
import type { EditorServerStatus } from '../../src/manifests/types.ts';
import type { WatchEvent } from '../../src/runtime/kubernetes/list-watch.ts';

const refuse = (what: string, code: number) => new ApiRefusal(what, { code, message: what });

export class FakeEditorServers implements EditorServers {
  readonly namespace = 'tests';
  readonly objects = new Map<string, EditorServerObject>();
  /** Replaces that answer 409 once each before taking effect (another writer got there first). */
  conflicts = 0;
  #version = 0;
  #uids = 0;
  #watchers = new Set<(event: WatchEvent<EditorServerObject>) => void>();

  describe(name: string): string {
    return `editorserver/${name}`;
  }

  async get(name: string): Promise<EditorServerObject | undefined> {
    return structuredClone(this.objects.get(name));
  }

  async create(object: EditorServerObject): Promise<EditorServerObject | undefined> {
    const name = object.metadata.name;
    if (this.objects.has(name)) return undefined;
    const { status: _ignored, ...rest } = structuredClone(object);
    const stored: EditorServerObject = { ...rest, metadata: { ...rest.metadata, uid: `00000000-0000-4000-8000-${String(++this.#uids).padStart(12, '0')}`, generation: 1 } };
    return this.#store(stored, 'ADDED');
  }

  async replace(object: EditorServerObject): Promise<EditorServerObject> {
    const name = object.metadata.name;
    const current = this.objects.get(name);
    if (!current) throw refuse(`${name} not found`, 404);
    if (this.conflicts > 0) {
      this.conflicts--;
      // Someone else's write lands first: the version moves, so this replace is refused.
      this.touch(name, (o) => ({ ...o, metadata: { ...o.metadata, labels: { ...o.metadata.labels, other: 'writer' } } }));
      throw refuse('the object has been modified', 409);
    }
    if (object.metadata.resourceVersion !== undefined && object.metadata.resourceVersion !== current.metadata.resourceVersion) throw refuse('the object has been modified', 409);
    const next: EditorServerObject = {
      ...structuredClone(object),
      status: current.status,
      metadata: {
        ...structuredClone(object.metadata),
        uid: current.metadata.uid,
        deletionTimestamp: current.metadata.deletionTimestamp,
        generation: (current.metadata.generation ?? 1) + (sameData(current.spec ?? null, object.spec ?? null) ? 0 : 1),
      },
    };
    if (!next.metadata.deletionTimestamp) delete next.metadata.deletionTimestamp;
    if (next.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) return this.#drop(name, next);
    return this.#store(next, 'MODIFIED');
  }

  async delete(name: string, uid?: string): Promise<boolean> {
    const current = this.objects.get(name);
    if (!current || (uid !== undefined && current.metadata.uid !== uid)) return false;
    if ((current.metadata.finalizers ?? []).length === 0) {
      this.#drop(name, current);
      return true;
    }
    if (!current.metadata.deletionTimestamp) this.#store({ ...current, metadata: { ...current.metadata, deletionTimestamp: new Date().toISOString() } }, 'MODIFIED');
    return true;
  }

  async setStatus(name: string, status: EditorServerStatus): Promise<EditorServerObject> {
    const current = this.objects.get(name);
    if (!current) throw refuse(`${name} not found`, 404);
    return this.#store({ ...current, status: structuredClone(status) }, 'MODIFIED');
  }

  /** A change made behind the store's back (kubectl), told through the watch. */
  touch(name: string, change: (object: EditorServerObject) => EditorServerObject): EditorServerObject {
    const current = this.objects.get(name)!;
    const next = change(structuredClone(current));
    const moved = !sameData(current.spec ?? null, next.spec ?? null);
    next.metadata.generation = (current.metadata.generation ?? 1) + (moved ? 1 : 0);
    return this.#store(next, 'MODIFIED');
  }

  transport() {
    return {
      list: async () => ({ items: [...this.objects.values()].map((o) => structuredClone(o)), resourceVersion: String(this.#version) }),
      watch: (_from: string, onEvent: (event: WatchEvent<EditorServerObject>) => void, signal: AbortSignal) => new Promise<void>((resolve) => {
        this.#watchers.add(onEvent);
        signal.addEventListener('abort', () => {
          this.#watchers.delete(onEvent);
          resolve();
        }, { once: true });
      }),
    };
  }

  #store(object: EditorServerObject, type: 'ADDED' | 'MODIFIED'): EditorServerObject {
    object.metadata.resourceVersion = String(++this.#version);
    this.objects.set(object.metadata.name, object);
    for (const tell of this.#watchers) tell({ type, object: structuredClone(object) });
    return structuredClone(object);
  }

  #drop(name: string, object: EditorServerObject): EditorServerObject {
    this.objects.delete(name);
    object.metadata.resourceVersion = String(++this.#version);
    for (const tell of this.#watchers) tell({ type: 'DELETED', object: structuredClone(object) });
    return structuredClone(object);
  }
}
