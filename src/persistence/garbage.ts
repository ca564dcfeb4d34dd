// Removes objects no committed snapshot refers to, once they are older than an hour: an object
// written by a snapshot still in progress (whose index is not written yet) is younger, so it
// stays. An object's age is in its key, so this works the same on every store.
import type { Catalog } from './catalog.ts';
import { OBJECTS_PREFIX, parseObjectKey } from './keys.ts';
import { forEachLimited } from './limit.ts';
import type { StoreClient } from './store-client.ts';

export interface GarbageContext {
  client: StoreClient;
  catalog: Catalog;
  now: () => number;
  log: (message: string) => void;
  /** Objects younger than this are never removed. */
  minAgeMs: number;
}

export async function collectGarbage(context: GarbageContext, signal?: AbortSignal): Promise<{ removed: number; bytes: number }> {
  const { client, catalog } = context;
  // Objects are listed after the indexes: one written between the two lists is young, so kept.
  const servers = await catalog.servers(undefined, signal);
  const snapshots = [...servers].flatMap(([name, server]) => server.ids.map((id) => ({ name, id })));
  const referenced = new Set<string>();
  await forEachLimited(snapshots, client.concurrency, async ({ name, id }) => {
    for (const key of await catalog.objectsOf(name, id, signal)) if (key !== null) referenced.add(key);
  }, signal);

  const cutoff = context.now() - context.minAgeMs;
  const garbage: Array<{ key: string; size: number }> = [];
  for (const key of await client.list(OBJECTS_PREFIX, signal)) {
    const object = parseObjectKey(key);
    // A key the engine did not make is not its to remove.
    if (object && object.createdAt < cutoff && !referenced.has(key)) garbage.push({ key, size: object.size });
  }
  let removed = 0;
  let bytes = 0;
  await forEachLimited(garbage, client.concurrency, async ({ key, size }) => {
    await client.delete(key, signal);
    removed++;
    bytes += size;
  }, signal);
  if (removed > 0) context.log(`garbage collection removed ${removed} objects (${bytes} bytes) from ${client.store.description}`);
  return { removed, bytes };
}
