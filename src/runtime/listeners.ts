// Who listens on a port of this machine's loopback, for the proxy's forwarded ports. Every editor
// of the process runtime shares the loopback, so a port is a server's only when the program
// listening on it is one of that server's: the LISTEN socket is found in /proc/net/tcp and tcp6,
// the process holding it by its inode (/proc/<pid>/fd links `socket:[inode]`), and the server by
// that process's DEVBOX_SERVER_NAME, which every program started inside an editor inherits.
import { readdirSync, readlinkSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { endianness } from 'node:os';
import { SERVER_NAME_VARIABLE } from '../core/child-env.ts';
import { environValue } from '../core/leftovers.ts';
import { listPids } from '../core/procfs.ts';
import type { EditorWorkload } from './editor-workload.ts';
import type { EditorEndpoint } from './interface.ts';

/** `this`: a program of the server asked about; `other`: anything else (never forwarded); `none`: nothing listens. */
export type PortListener = 'this' | 'other' | 'none';

/** The socket tables read, IPv4 then IPv6. */
export const SOCKET_TABLES = ['/proc/net/tcp', '/proc/net/tcp6'] as const;

/** TCP_LISTEN in the tables' `st` column. */
const LISTEN = '0A';

/**
 * The inodes of the LISTEN sockets a connection to the port on the loopback may reach, by port:
 * those bound to 127.0.0.1, 0.0.0.0, ::1, :: and the IPv4-mapped 127.0.0.1 and 0.0.0.0. A socket
 * bound to another address (another interface, 127.0.0.2) is not reached through the loopback.
 */
export async function loopbackListeners(tables: readonly string[] = SOCKET_TABLES): Promise<Map<number, number[]>> {
  const byPort = new Map<number, number[]>();
  // Read off the event loop: the kernel writes a line per socket of the machine (the proxy's own
  // connections too), which takes milliseconds on a busy one.
  const texts = await Promise.all(tables.map((table) => readFile(table, 'latin1').catch(() => ''))); // no IPv6, say
  for (const text of texts) {
    for (const line of text.split('\n').slice(1)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || fields[3] !== LISTEN) continue;
      const [address, portHex] = fields[1].split(':');
      if (!portHex || !isLoopbackOrAny(address)) continue;
      const port = parseInt(portHex, 16);
      const inode = Number(fields[9]);
      if (!Number.isSafeInteger(inode) || inode <= 0) continue;
      const list = byPort.get(port);
      if (list) list.push(inode);
      else byPort.set(port, [inode]);
    }
  }
  return byPort;
}

/** The address's bytes: the tables write each 32-bit word in the machine's own byte order. */
function addressBytes(hex: string): number[] {
  const bytes: number[] = [];
  for (let i = 0; i + 8 <= hex.length; i += 8) {
    const word = parseInt(hex.slice(i, i + 8), 16);
    const big = [word >>> 24, (word >>> 16) & 0xff, (word >>> 8) & 0xff, word & 0xff];
    bytes.push(...(endianness() === 'LE' ? big.reverse() : big));
  }
  return bytes;
}

function isLoopbackOrAny(hex: string): boolean {
  const b = addressBytes(hex);
  const v4 = (at: number) => (b[at] === 127 && b[at + 1] === 0 && b[at + 2] === 0 && b[at + 3] === 1) || b.slice(at, at + 4).every((x) => x === 0);
  if (b.length === 4) return v4(0);
  if (b.length !== 16 || b.slice(0, 10).some((x) => x !== 0)) return false;
  if (b[10] === 0xff && b[11] === 0xff) return v4(12); // ::ffff:127.0.0.1, ::ffff:0.0.0.0
  return b.slice(10, 15).every((x) => x === 0) && (b[15] === 0 || b[15] === 1); // ::, ::1
}

/**
 * The process holding each of these socket inodes (the first one found: a socket shared by a fork
 * is held by both), or undefined where no process this service may read holds it (another user's).
 */
export function socketHolders(inodes: readonly number[]): Map<number, number | undefined> {
  const wanted = new Map(inodes.map((inode) => [`socket:[${inode}]`, inode]));
  const found = new Map<number, number | undefined>(inodes.map((inode) => [inode, undefined]));
  let left = wanted.size;
  for (const pid of listPids()) {
    if (left === 0) break;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone, or another user's
    }
    for (const fd of fds) {
      let link: string;
      try {
        link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const inode = wanted.get(link);
      if (inode !== undefined && found.get(inode) === undefined) {
        found.set(inode, pid);
        left--;
      }
    }
  }
  return found;
}

export interface ListenerTableOptions {
  /** How long one read of the socket tables answers for. Default 1 s. */
  ttlMs?: number;
  /**
   * A port found with nothing on it is looked for again in a read begun after the question (a
   * program may have just started), reads for that at least this far apart. Default 50 ms.
   */
  recheckMs?: number;
  now?: () => number;
  tables?: readonly string[];
}

/**
 * Who listens on which loopback port, read from /proc and kept briefly, so the proxy does not read
 * the tables for every request of a page. The holder of a socket, the costly part (every process's
 * file descriptors), is looked for once per socket, and kept while that socket listens.
 */
export class ListenerTable {
  readonly #ttlMs: number;
  readonly #recheckMs: number;
  readonly #now: () => number;
  readonly #tables: readonly string[];
  #read: { at: number; byPort: Map<number, number[]> } | undefined;
  /** The read under way, which every question meanwhile waits for. */
  #reading: Promise<Map<number, number[]>> | undefined;
  /** The server (its DEVBOX_SERVER_NAME, or null for a process of no server or one unreadable) of each socket seen. */
  #owners = new Map<number, string | null>();

  constructor(options: ListenerTableOptions = {}) {
    this.#ttlMs = options.ttlMs ?? 1000;
    this.#recheckMs = options.recheckMs ?? 50;
    this.#now = options.now ?? Date.now;
    this.#tables = options.tables ?? SOCKET_TABLES;
  }

  /** Whether the program listening on the port (every socket a loopback connection may reach) is one of server `name`'s. */
  async of(name: string, port: number): Promise<PortListener> {
    const asked = this.#now();
    let inodes = (await this.#within(this.#ttlMs)).get(port) ?? [];
    // Nothing there in the last read: a program started since is not to be told "none".
    if (inodes.length === 0) inodes = (await this.#since(asked)).get(port) ?? [];
    if (inodes.length === 0) return 'none';
    this.#findOwners(inodes);
    return inodes.every((inode) => this.#owners.get(inode) === name) ? 'this' : 'other';
  }

  /** The ports server `name`'s programs listen on now (the tables as last read, within the TTL). */
  async portsOf(name: string): Promise<number[]> {
    const byPort = await this.#within(this.#ttlMs);
    this.#findOwners([...byPort.values()].flat());
    const ports: number[] = [];
    for (const [port, inodes] of byPort) if (inodes.every((inode) => this.#owners.get(inode) === name)) ports.push(port);
    return ports.sort((a, b) => a - b);
  }

  /** Looks for the holders of the sockets not seen before, in one pass over /proc. */
  #findOwners(inodes: number[]): void {
    const unknown = inodes.filter((inode) => !this.#owners.has(inode));
    if (unknown.length === 0) return;
    for (const [inode, pid] of socketHolders(unknown)) {
      this.#owners.set(inode, pid === undefined ? null : environValue(pid, SERVER_NAME_VARIABLE) ?? null);
    }
  }

  /** The tables as read at most `maxAgeMs` ago: read now when the last read is older. */
  #within(maxAgeMs: number): Promise<Map<number, number[]>> {
    if (this.#read && this.#now() - this.#read.at < maxAgeMs) return Promise.resolve(this.#read.byPort);
    return this.#reading ?? this.#startRead();
  }

  /** The tables of a read begun at or after `since`, such reads at least recheckMs apart. */
  async #since(since: number): Promise<Map<number, number[]>> {
    let waited = false;
    for (;;) {
      if (this.#read && this.#read.at >= since) return this.#read.byPort;
      if (this.#reading) {
        await this.#reading;
        continue;
      }
      const wait = this.#read ? this.#read.at + this.#recheckMs - this.#now() : 0;
      if (wait > 0 && !waited) {
        waited = true;
        await new Promise((resolve) => setTimeout(resolve, wait));
        continue;
      }
      return this.#startRead();
    }
  }

  #startRead(): Promise<Map<number, number[]>> {
    const at = this.#now();
    this.#reading = loopbackListeners(this.#tables).then((byPort) => {
      this.#read = { at, byPort };
      // Sockets closed since are forgotten: their inode may come back for a new one, of anyone.
      const live = new Set([...byPort.values()].flat());
      for (const inode of this.#owners.keys()) if (!live.has(inode)) this.#owners.delete(inode);
      return byPort;
    }).finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }
}

/** Whether something accepts a connection at host:port within the time given. */
export function portAnswers(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (answer: boolean): void => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * The ports of a running server that listen now, for its listing: those its programs listen on,
 * where the workload can tell (portsOf, on one machine); else, where every port of the editor's
 * address is the server's (a Pod), which of `declared` accept a connection there.
 */
export function listeningPorts(workload: Pick<EditorWorkload, 'portsOf'>) {
  return async (name: string, endpoint: EditorEndpoint, declared: readonly number[]): Promise<number[]> => {
    if (workload.portsOf) return workload.portsOf(name);
    const answers = await Promise.all(declared.map((port) => portAnswers(endpoint.host, port)));
    return declared.filter((_, i) => answers[i]);
  };
}
