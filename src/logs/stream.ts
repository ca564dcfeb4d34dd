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

/** The log frame clients read: type, server_id, server_name, level, source, message, timestamp; exactly these fields. */
function frame(entry: LogEntry): string {
  return JSON.stringify({
    type: 'log',
    server_id: entry.serverId,
    server_name: entry.serverName,
    level: entry.level,
    source: entry.source,
    message: entry.message,
    timestamp: entry.timestamp,
  });
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
    // One subscription for all clients, so each entry is serialised once however many listen.
    this.#unsubscribe = hub.subscribe(null, (entry) => this.#broadcast(entry));
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
    for (const entry of replay) this.#send(client, frame(entry));
    this.#clients.add(client);
  }

  #broadcast(entry: LogEntry): void {
    let data: string | undefined;
    for (const client of this.#clients) {
      if (client.name !== null && client.name !== entry.name) continue;
      if (client.sees && !client.sees(entry.name)) continue;
      data ??= frame(entry);
      this.#send(client, data);
    }
  }

  #send(client: Client, data: string): void {
    const { ws } = client;
    if (ws.readyState !== OPEN) return;
    if (ws.bufferedAmount > this.#maxBufferedBytes) {
      // Too far behind: stop queueing for it. The close frame waits behind its unsent data; if it
      // never reads again, the ping check terminates it, so its buffer cannot grow further.
      this.#dropped++;
      ws.close(1013, 'too slow: the log stream fell behind, reconnect with ?tail=');
      return;
    }
    ws.send(data);
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
