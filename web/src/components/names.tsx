// How a person tells servers apart. Display names may repeat (ids are the identity), so where two
// servers share one, each also shows its manifest name, which is unique: "Hello (hello-2)".
import type { ServerRecord } from '../api/types.ts';

/** A server's name as shown: the display name, and the manifest name when it is needed. */
export interface ServerName {
  name: string;
  /** Set only when another server has the same display name. */
  manifest?: string;
  /** One string for accessible names, notifications and options: "Hello" or "Hello (hello-2)". */
  label: string;
}

/** Two names a person would take for the same one: case and spacing aside. */
const sameKey = (name: string) => name.trim().replace(/\s+/g, ' ').toLowerCase();
/** Each record's key, kept: the map is new with every change, most of its records are not. */
const keys = new WeakMap<ServerRecord, string>();
function keyOf(server: ServerRecord): string {
  let key = keys.get(server);
  if (key === undefined) keys.set(server, (key = sameKey(server.name)));
  return key;
}

const cache = new WeakMap<Map<string, ServerRecord>, Map<string, ServerName>>();

/** The names of every server of the store's map, by id; computed once per map. */
export function serverNames(servers: Map<string, ServerRecord>): Map<string, ServerName> {
  const known = cache.get(servers);
  if (known) return known;
  const counts = new Map<string, number>();
  for (const server of servers.values()) counts.set(keyOf(server), (counts.get(keyOf(server)) ?? 0) + 1);
  const names = new Map<string, ServerName>();
  for (const server of servers.values()) {
    const shared = (counts.get(keyOf(server)) ?? 0) > 1;
    names.set(server.id, shared
      ? { name: server.name, manifest: server.manifest, label: `${server.name} (${server.manifest})` }
      : { name: server.name, label: server.name });
  }
  cache.set(servers, names);
  return names;
}

/** The server's name within `servers`; its display name alone when it is not among them. */
export function nameOf(server: ServerRecord, servers: Map<string, ServerRecord>): ServerName {
  return serverNames(servers).get(server.id) ?? { name: server.name, label: server.name };
}

/**
 * The name, then the manifest name, quieter: "Hello (hello-2)". What is seen is what is read
 * aloud, so the label works as an accessible name and for voice control alike.
 */
export function ServerNameText({ name }: { name: ServerName }) {
  if (!name.manifest) return <>{name.name}</>;
  return <>{name.name} <span class="manifest-tag">({name.manifest})</span></>;
}
