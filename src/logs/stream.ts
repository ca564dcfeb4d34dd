// The live log streams: WebSocket /ws/logs (all servers) and /ws/logs/{id} (one server).

import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket, WebSocketServer } from 'ws';
import { apiError, notFound } from '../core/error-catalogue.ts';
import { HttpError, writeRawError } from '../core/errors.ts';
import type { LogEntry } from './entry.ts';
import type { LogHub } from './hub.ts';
import { parseTailParam } from './lines.ts';
import { requiredOnFirstUse } from '../core/first-use.ts';

/** ws, required at the first log stream's upgrade (memory at rest). */
const loadWs = requiredOnFirstUse<typeof import('ws')>('ws');

export interface LogStreamOptions {
  /** A client whose unsent data passes this is closed with 1013. Default 1 MiB. */
  maxBufferedBytes?: number;
  /** Ping period; a client that has not answered the previous ping is dropped. Default 30 s. */
  pingIntervalMs?: number;
  /**
   * Which servers' entries the client of `req` may receive, by manifest name, asked again for
   * every entry (the answer may change while the stream is open). Default: every server's.
   */
  visibleTo?: (req: IncomingMessage) => (name: string) => boolean;
  /** Headers (raw name, value pairs) for every answer to `req`, the 101 and refusals alike: the API's CORS headers. */
  responseHeaders?: (req: IncomingMessage) => readonly string[];
}

interface Client {
  ws: WebSocket;
  /** The manifest name it follows, or null for all servers. */
  name: string | null;
  /** Whether it may receive a server's entries; undefined: every server's. */
  sees?: (name: string) => boolean;
  alive: boolean;
}

const PATH = /^\/ws\/logs(?:\/([^/]+))?\/?$/;
/** WebSocket.OPEN. */
const OPEN = 1;

/**
 * The log frame clients read: type, server_id, server_name, level, source, message, timestamp;
 * exactly these fields, in this order, as JSON.stringify of that object gives them. The part
 * before the message is the same for a server's lines of one level and source: it is made once
 * and reused while those stay the same (a batch), so a line costs the JSON of its message.
 */
let head = { serverId: '', serverName: '', level: '', source: '', text: '' };
export function frame(entry: LogEntry): string {
  if (entry.serverId !== head.serverId || entry.serverName !== head.serverName || entry.level !== head.level || entry.source !== head.source) {
    const { serverId, serverName, level, source } = entry;
    const text = `{"type":"log","server_id":${JSON.stringify(serverId)},"server_name":${JSON.stringify(serverName)},"level":${JSON.stringify(level)},"source":${JSON.stringify(source)},"message":`;
    head = { serverId, serverName, level, source, text };
  }
  return `${head.text}${JSON.stringify(entry.message)},"timestamp":${JSON.stringify(entry.timestamp)}}`;
}

/** Frames queued on a corked socket before it is uncorked: a batch goes out in writes of about this size. */
const CORK_BYTES = 64 * 1024;

/** The TCP socket under a ws WebSocket (ws keeps it as `_socket`), to write a batch's frames at once. */
function socketOf(ws: WebSocket): { cork(): void; uncork(): void } | undefined {
  const socket = (ws as unknown as { _socket?: { cork?: unknown; uncork?: unknown } })._socket;
  return typeof socket?.cork === 'function' && typeof socket.uncork === 'function' ? (socket as { cork(): void; uncork(): void }) : undefined;
}

/** Serves the log streams from a LogHub; the HTTP server hands it its 'upgrade' events. */
export class LogStreamServer {
  readonly #hub: LogHub;
  readonly #resolve: (id: string, req: IncomingMessage) => { name: string } | undefined;
  readonly #visibleTo: LogStreamOptions['visibleTo'];
  readonly #headersFor: (req: IncomingMessage) => readonly string[];
  readonly #maxBufferedBytes: number;
  /** Made at the first stream's upgrade: ws is required then, not at start (memory at rest). */
  #wss: WebSocketServer | undefined;
  readonly #clients = new Set<Client>();
  readonly #unsubscribe: () => void;
  readonly #pingTimer: NodeJS.Timeout;
  /** Clients closed for falling behind (1013) or for not answering a ping, since the start. */
  #dropped = 0;

  /** `resolve`: the server behind an id for this request, or undefined (unknown, or not the requester's to see). */
  constructor(
    hub: LogHub,
    resolve: (id: string, req: IncomingMessage) => { name: string } | undefined,
    options: LogStreamOptions = {},
  ) {
    this.#hub = hub;
    this.#resolve = resolve;
    this.#visibleTo = options.visibleTo;
    this.#headersFor = options.responseHeaders ?? (() => []);
    this.#maxBufferedBytes = options.maxBufferedBytes ?? 1024 * 1024;
    // One subscription for all clients, so each entry is serialised once however many listen,
    // and once per batch, so a batch of lines is one write to each client.
    this.#unsubscribe = hub.subscribeBatch(null, (entries) => this.#broadcast(entries));
    this.#pingTimer = setInterval(() => this.#ping(), options.pingIntervalMs ?? 30_000);
    this.#pingTimer.unref();
  }

  /** The WebSocket server, made on first use; ws is required synchronously, so the upgrade is handled in this turn. */
  #server(): WebSocketServer {
    if (this.#wss) return this.#wss;
    const { WebSocketServer: Server } = loadWs();
    const wss = new Server({ noServer: true, clientTracking: false, maxPayload: 4096 });
    // A handshake ws refuses (a POST, a bad key or version) gets the error envelope, not ws's HTML.
    wss.on('wsClientError', (error, socket, req) => {
      const refusal = apiError('BAD_HANDSHAKE', { problem: error.message }, { status: req.method === 'GET' ? 400 : 405 });
      writeRawError(socket, refusal, this.#headersFor(req));
    });
    wss.on('headers', (lines, req) => {
      const extra = this.#headersFor(req);
      for (let i = 0; i < extra.length; i += 2) lines.push(`${extra[i]}: ${extra[i + 1]}`);
    });
    this.#wss = wss;
    return wss;
  }

  /**
   * Takes an upgrade request for /ws/logs or /ws/logs/{id}; false for any other path. An
   * unknown id or a bad ?tail= is answered with a plain HTTP error before any upgrade.
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    // Not `new URL`: a request target such as "//" is no URL at all, and must only miss this route.
    const target = req.url ?? '/';
    const query = target.indexOf('?');
    const match = PATH.exec(query < 0 ? target : target.slice(0, query));
    if (!match) return false;
    const params = new URLSearchParams(query < 0 ? '' : target.slice(query + 1));
    let name: string | null = null;
    let tail: number;
    try {
      tail = parseTailParam(params.get('tail') ?? undefined);
      if (match[1] !== undefined) {
        const id = decodeURIComponent(match[1]);
        const server = this.#resolve(id, req);
        if (!server) throw notFound(id);
        name = server.name;
      }
    } catch (err) {
      writeRawError(socket, err instanceof HttpError ? err : apiError('INVALID_PATH'), this.#headersFor(req));
      return true;
    }
    const sees = this.#visibleTo?.(req);
    this.#server().handleUpgrade(req, socket, head, (ws) => this.#connect(ws, name, tail, sees));
    return true;
  }

  /** Streams open now, and those dropped for falling behind or not answering (metrics). */
  get state(): { clients: number; dropped: number } {
    return { clients: this.#clients.size, dropped: this.#dropped };
  }

  /** Closes every stream (1001) and stops the ping timer. */
  async close(): Promise<void> {
    clearInterval(this.#pingTimer);
    this.#unsubscribe();
    const closing = [...this.#clients].map(
      (client) =>
        new Promise<void>((resolve) => {
          client.ws.once('close', () => resolve());
          client.ws.close(1001, 'the log stream is shutting down');
          // A client that does not answer the close is cut off.
          setTimeout(() => client.ws.terminate(), 1000).unref();
        }),
    );
    await Promise.all(closing);
    this.#wss?.close();
  }

  #connect(ws: WebSocket, name: string | null, tail: number, sees: Client['sees']): void {
    const client: Client = { ws, name, sees, alive: true };
    ws.on('pong', () => {
      client.alive = true;
    });
    ws.on('close', () => this.#clients.delete(client));
    ws.on('error', () => ws.terminate()); // a broken connection; 'close' follows
    // Replay and joining happen in one turn of the event loop: nothing in between is missed or doubled.
    const replay = name !== null && sees && !sees(name) ? [] : this.#hub.tail(name, tail, sees);
    this.#sendAll(client, replay.map(frame));
    this.#clients.add(client);
  }

  /** A batch is one server's entries (LogHub.subscribeBatch). */
  #broadcast(entries: readonly LogEntry[]): void {
    if (entries.length === 0) return;
    const { name } = entries[0];
    let frames: string[] | undefined;
    for (const client of this.#clients) {
      if (client.name !== null && client.name !== name) continue;
      if (client.sees && !client.sees(name)) continue;
      frames ??= entries.map(frame);
      this.#sendAll(client, frames);
    }
  }

  /** Sends frames in order, the socket corked so that they leave in writes of about CORK_BYTES rather than one each. */
  #sendAll(client: Client, frames: readonly string[]): void {
    if (frames.length === 0) return;
    const socket = frames.length > 1 ? socketOf(client.ws) : undefined;
    socket?.cork();
    try {
      let corked = 0;
      for (const data of frames) {
        if (!this.#send(client, data)) return;
        corked += data.length;
        if (socket && corked >= CORK_BYTES) {
          // Out to the kernel now, so bufferedAmount counts only what the client has not taken.
          socket.uncork();
          socket.cork();
          corked = 0;
        }
      }
    } finally {
      socket?.uncork();
    }
  }

  /** False once the client is closed or closing (the rest of a batch is not for it). */
  #send(client: Client, data: string): boolean {
    const { ws } = client;
    if (ws.readyState !== OPEN) return false;
    if (ws.bufferedAmount > this.#maxBufferedBytes) {
      // Too far behind: stop queueing for it. The close frame waits behind its unsent data; if it
      // never reads again, the ping check terminates it, so its buffer cannot grow further.
      this.#dropped++;
      ws.close(1013, 'too slow: the log stream fell behind, reconnect with ?tail=');
      return false;
    }
    ws.send(data);
    return true;
  }

  #ping(): void {
    for (const client of this.#clients) {
      if (!client.alive) {
        // One closed for falling behind already counts.
        if (client.ws.readyState === OPEN) this.#dropped++;
        client.ws.terminate();
        continue;
      }
      client.alive = false;
      client.ws.ping();
    }
  }
}
