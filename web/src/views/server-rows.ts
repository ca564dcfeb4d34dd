// The servers table's rows, sorted and filtered from keys computed once per record. The watch
// stream replaces a record when it changes and never edits one, so the keys are kept by record:
// at 10,000 servers a keystroke in the filter box is one pass over cached lowercase text, and a
// click on a column header one sort over cached values.
import type { ServerRecord, StatusWord } from '../api/types.ts';

export type Column = 'name' | 'status' | 'port' | 'pid' | 'uptime' | 'cpu' | 'memory' | 'extensions' | 'owner';
export type Direction = 1 | -1;

const STATUS_ORDER: readonly StatusWord[] = ['running', 'starting', 'stopping', 'failed', 'stopped'];

interface Keys {
  /** What the filter matches: name, manifest name, status, reason and owner, lowercase. */
  text: string;
  name: string;
  owner: string | null;
  /** -start time: an earlier start is a longer uptime, so uptimes sort without the clock. */
  uptime: number | null;
}

const cache = new WeakMap<ServerRecord, Keys>();

function keysOf(server: ServerRecord): Keys {
  let keys = cache.get(server);
  if (!keys) {
    const name = server.name.toLowerCase();
    const owner = server.owner?.toLowerCase() ?? null;
    keys = {
      text: `${name} ${server.manifest} ${server.status} ${server.reason ?? ''} ${owner ?? ''}`.toLowerCase(),
      name,
      owner,
      uptime: server.start_time ? -Date.parse(server.start_time) : null,
    };
    cache.set(server, keys);
  }
  return keys;
}

function sortValue(server: ServerRecord, column: Column): string | number | null {
  switch (column) {
    case 'name': return keysOf(server).name;
    case 'status': return STATUS_ORDER.indexOf(server.status);
    case 'port': return server.port;
    case 'pid': return server.pid;
    case 'uptime': return keysOf(server).uptime;
    case 'cpu': return server.start_time ? server.cpu_percent : null;
    case 'memory': return server.start_time ? server.memory_mb : null;
    case 'extensions': return server.extensions.length;
    case 'owner': return keysOf(server).owner;
  }
}

/** Code-unit order, not the locale's: a tie-break only, and a collation per comparison costs more than the sort. */
const order = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);

/** The servers sorted by `column`, empty values last whichever the direction; ties by name, manifest name, id. */
export function sortServers(servers: Iterable<ServerRecord>, column: Column, direction: Direction): ServerRecord[] {
  const rows = [...servers].map((server) => ({ server, value: sortValue(server, column) }));
  rows.sort((a, b) => {
    const x = a.value;
    const y = b.value;
    if (x === null && y !== null) return 1;
    if (y === null && x !== null) return -1;
    if (x !== null && y !== null && x !== y) return (x < y ? -1 : 1) * direction;
    // Equal names: by manifest name, which tells them apart on screen.
    return order(a.server.name, b.server.name) || order(a.server.manifest, b.server.manifest) || order(a.server.id, b.server.id);
  });
  return rows.map((row) => row.server);
}

/** The rows whose name, manifest name, status, reason or owner hold every word of `filter` (any case). */
export function filterServers(rows: ServerRecord[], filter: string): ServerRecord[] {
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return rows;
  return rows.filter((server) => {
    const text = keysOf(server).text;
    return words.every((word) => text.includes(word));
  });
}
