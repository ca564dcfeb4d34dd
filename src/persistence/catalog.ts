// What the store holds, read through its keys: each server's committed snapshots (an index
// present = committed) and deletion mark. Indexes never change once written, so what was read
// of one (its info, its objects) is remembered for the life of the engine.
import { DamagedIndexError, parseIndex, type SnapshotIndex } from './index-file.ts';
import { indexKey, parseServerKey, serverPrefix, SERVERS_PREFIX } from './keys.ts';
import type { StoreClient } from './store-client.ts';
import type { SnapshotInfo } from './types.ts';

/** A declared record at the store, as its key names it. */
export interface DeclaredKey {
  key: string;
  id: string;
  digest: string;
}

export interface ServerKeys {
  /** Committed snapshot ids, oldest first. */
  ids: string[];
  marked: boolean;
  /** Declared records, oldest first: the last is current, the others are left by a write cut short. */
  declared: DeclaredKey[];
}

export class Catalog {
  private readonly client: StoreClient;
  private readonly log: (message: string) => void;
  private readonly infos = new Map<string, SnapshotInfo>();
  private readonly objectLists = new Map<string, Array<string | null>>();

  constructor(client: StoreClient, log: (message: string) => void) {
    this.client = client;
    this.log = log;
  }

  async server(name: string, signal?: AbortSignal): Promise<ServerKeys> {
    return (await this.servers(serverPrefix(name), signal)).get(name) ?? { ids: [], marked: false, declared: [] };
  }

  /** Every server with a key in the store (`prefix` narrows it to one). */
  async servers(prefix = SERVERS_PREFIX, signal?: AbortSignal): Promise<Map<string, ServerKeys>> {
    const found = new Map<string, ServerKeys>();
    for (const key of await this.client.list(prefix, signal)) {
      const parsed = parseServerKey(key);
      if (!parsed) continue;
      let server = found.get(parsed.name);
      if (!server) found.set(parsed.name, server = { ids: [], marked: false, declared: [] });
      if (parsed.kind === 'index') server.ids.push(parsed.id);
      else if (parsed.kind === 'declared') server.declared.push({ key, id: parsed.id, digest: parsed.digest });
      else server.marked = true;
    }
    for (const server of found.values()) {
      server.ids.sort();
      server.declared.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    }
    return found;
  }

  /** The index of a snapshot; undefined when it is gone; throws when it is damaged. */
  async readIndex(name: string, id: string, signal?: AbortSignal): Promise<SnapshotIndex | undefined> {
    const key = indexKey(name, id);
    const bytes = await this.client.get(key, signal);
    if (!bytes) return undefined;
    const index = parseIndex(bytes, key);
    this.remember(name, index);
    return index;
  }

  remember(name: string, index: SnapshotIndex): void {
    const key = indexKey(name, index.info.id);
    this.infos.set(key, index.info);
    this.objectLists.set(key, index.objects);
  }

  forget(name: string, id: string): void {
    this.infos.delete(indexKey(name, id));
    this.objectLists.delete(indexKey(name, id));
  }

  /** A committed snapshot's info; undefined when gone or damaged (said in the log). */
  async info(name: string, id: string, signal?: AbortSignal): Promise<SnapshotInfo | undefined> {
    const known = this.infos.get(indexKey(name, id));
    if (known) return known;
    try {
      return (await this.readIndex(name, id, signal))?.info;
    } catch (error) {
      if (!(error instanceof DamagedIndexError)) throw error;
      this.log(`skipping snapshot ${id} of ${name}: ${(error as Error).message}`);
      return undefined;
    }
  }

  /**
   * The object keys a snapshot refers to. Throws when its index went away since it was listed: a
   * newer index, not listed, may share its objects, so a collection must not go on. A damaged
   * index refers to nothing (it can never be restored; objects it shares are kept by the others).
   */
  async objectsOf(name: string, id: string, signal?: AbortSignal): Promise<Array<string | null>> {
    const known = this.objectLists.get(indexKey(name, id));
    if (known) return known;
    let index: SnapshotIndex | undefined;
    try {
      index = await this.readIndex(name, id, signal);
    } catch (error) {
      if (!(error instanceof DamagedIndexError)) throw error;
      this.log(`garbage collection: ${(error as Error).message}`);
      return [];
    }
    if (!index) throw new Error(`the index of snapshot ${id} of ${name} went away while collecting garbage: try again`);
    return index.objects;
  }

  /** Newest first, the damaged ones left out. */
  async list(name: string, ids: string[], signal?: AbortSignal): Promise<SnapshotInfo[]> {
    const infos = await Promise.all([...ids].reverse().map((id) => this.info(name, id, signal)));
    return infos.filter((info): info is SnapshotInfo => info !== undefined);
  }
}
