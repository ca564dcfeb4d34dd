// Writes of an EditorServer object's metadata that only the controller makes: its finalizer put
// on when the server is first asked to run, and taken off once the server is deleted.
import { ConflictError } from '../manifests/store.ts';
import { ApiRefusal, FINALIZER, type EditorServerObject, type EditorServers } from './editor-servers.ts';

const MAX_ATTEMPTS = 5;

/** Adds the controller's finalizer; the object as written, or undefined when it changed meanwhile (the watch shows the change, and it is added then). */
export async function addFinalizer(api: EditorServers, object: EditorServerObject): Promise<EditorServerObject | undefined> {
  try {
    return await api.replace({ ...object, metadata: { ...object.metadata, finalizers: [...(object.metadata.finalizers ?? []), FINALIZER] } });
  } catch (error) {
    if (error instanceof ApiRefusal && (error.status === 409 || error.status === 404)) return undefined;
    throw error;
  }
}

/**
 * Removes the finalizer from the server's object (only that object: one made again under its
 * name is left alone), deleting it first if nobody has.
 */
export async function releaseObject(api: EditorServers, name: string, uid: string | undefined): Promise<void> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const object = await api.get(name);
    if (!object || (uid !== undefined && object.metadata.uid !== uid)) return;
    if (!object.metadata.deletionTimestamp) await api.delete(name, object.metadata.uid);
    const finalizers = (object.metadata.finalizers ?? []).filter((f) => f !== FINALIZER);
    if (finalizers.length === (object.metadata.finalizers ?? []).length) return;
    try {
      await api.replace({ ...object, metadata: { ...object.metadata, finalizers } });
      return;
    } catch (error) {
      if (error instanceof ApiRefusal && error.status === 404) return;
      if (!(error instanceof ApiRefusal && error.status === 409)) throw error;
    }
  }
  throw new ConflictError(`${api.describe(name)} kept changing while its finalizer was being removed: it is removed at the next try`);
}

/**
 * True when resource version `a` is known to be older than `b`. Versions are opaque to clients;
 * every Kubernetes API server backed by etcd makes them increasing integers, and anything else
 * is taken as news (never older).
 */
export function olderVersion(a: string | undefined, b: string | undefined): boolean {
  return a !== undefined && b !== undefined && /^\d+$/.test(a) && /^\d+$/.test(b) && BigInt(a) < BigInt(b);
}
