// The editor proxy: /vscode/{port}/… and /editor/{port}/… to the endpoint of the managed, running
// editor on {port} (the runtime says where it answers), and nowhere else. This file takes the
// requests and upgrades and holds the connections; route.ts parses the paths, headers.ts decides
// which headers cross, forwarding.ts streams an answer back and relay.ts a WebSocket.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Pool } from 'undici';
import { apiError } from '../core/error-catalogue.ts';
import { HttpError, writeError, writeRawError } from '../core/errors.ts';
// Not an ESM import of node:http, which would load Node's own bundled undici (see core/http.ts).
import * as http from '../core/http.ts';
import type { EditorEndpoint } from '../runtime/interface.ts';
import { requiredOnFirstUse } from '../core/first-use.ts';
import { isForwardedPath, LOOPBACK_LOOKUP, LOOPBACKS, unavailable, type ForwardedPorts } from './forwarded-ports.ts';
import { Forwarding } from './forwarding.ts';
import { DROPPED_FOR_UNDICI, DROPPED_READ_UPGRADE_HEADERS, DROPPED_UPGRADE_HEADERS, editorRequestHeaders, HOP_BY_HOP_RESPONSE, rawHead } from './headers.ts';
import { socketProtocol } from './editor-frames.ts';
import { relay } from './relay.ts';
import { editorPath, parseRoute, unavailableCause, type Route } from './route.ts';

/**
 * What the proxy tells about the traffic to each editor (idle tracking, metrics). Called on the
 * request path, synchronously: each call must be cheap and must not throw.
 */
export interface ProxyObserver {
  /** A proxied HTTP request ended: the status sent (502 when the editor did not answer), the request body's bytes and the response's, headers included. */
  request(port: number, status: number, bytesIn: number, bytesOut: number): void;
  /** A WebSocket to the editor opened (the 101 went out). */
  socketOpened(port: number): void;
  /** Bytes passed over an open WebSocket: `fromClient` toward the editor, else toward the browser. Called per chunk. */
  socketData(port: number, bytes: number, fromClient: boolean): void;
  /** That WebSocket closed. */
  socketClosed(port: number): void;
  /**
   * A relayed chunk held a message that counts (editor-frames.ts): from the browser a person's
   * input, from the editor output (a terminal printing). Optional: only an observer that has it
   * makes the proxy read frames, and take the compression offer off the upgrade (a compressed
   * message could not be read cheaply).
   */
  socketMessage?(port: number, fromClient: boolean): void;
}

export interface EditorProxyOptions {
  /**
   * Where the managed editor running on the port answers for this request; undefined for any
   * other port, and for an editor the requester may not reach, which is never contacted.
   */
  route: (port: number, req: IncomingMessage) => EditorEndpoint | undefined;
  /** Connections kept open to one editor, in use and idle together. Default 64. */
  maxSocketsPerEditor?: number;
  /** An editor silent this long on a request gets the request a 502. Default 60 s; WebSockets are exempt. */
  timeoutMs?: number;
  /** Where proxy errors are reported. Default console.error. */
  log?: (message: string) => void;
  /** Told about every proxied request and WebSocket. */
  observer?: ProxyObserver;
  /**
   * Asked before a request for a port with no route gets its 404: answers it itself (such as a
   * page saying the editor is starting) and returns true, or returns false for the 404.
   */
  unroutable?: (port: number, req: IncomingMessage, res: ServerResponse) => boolean;
  /**
   * The ports the editors' programs listen on, reached under an editor's address
   * (`/vscode/{port}/proxy/{p}/`, forwarded-ports.ts) once the editor's own route allows the
   * request. Without it those paths go to the editor like any other.
   */
  forwardedPorts?: ForwardedPorts;
}

type Next = (err?: unknown) => void;

// EPIPE: the editor answered and closed before the whole request body was sent.
const KNOWN_NETWORK_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE']);

/**
 * undici's connection pool, loaded when the first request is proxied: only its pool (with its
 * WebAssembly HTTP parser), about 1 MB of heap and 9 MB of RSS, where all of undici is 3 MB and 16 MB.
 */
const loadPool = requiredOnFirstUse<typeof Pool>('undici/lib/dispatcher/pool.js');

/**
 * Streams HTTP requests to editors over a bounded keep-alive pool per editor (undici's, which costs
 * about a third less CPU per request than Node's HTTP client), and WebSocket upgrades with Node's
 * client, relaying the upgraded sockets directly.
 */
export class EditorProxy {
  readonly #route: EditorProxyOptions['route'];
  readonly #log: (message: string) => void;
  /** For WebSocket upgrades. */
  readonly #agent: http.Agent;
  /** For requests: one pool per editor endpoint, at most maxSockets connections each. */
  readonly #pools = new Map<string, Pool>();
  readonly #maxSockets: number;
  readonly #timeoutMs: number;
  readonly #observer: ProxyObserver | undefined;
  readonly #unroutable: EditorProxyOptions['unroutable'];
  readonly #ports: ForwardedPorts | undefined;

  constructor(options: EditorProxyOptions) {
    this.#route = options.route;
    this.#observer = options.observer;
    this.#unroutable = options.unroutable;
    this.#ports = options.forwardedPorts;
    this.#log = options.log ?? ((message) => console.error(message));
    const maxSockets = options.maxSocketsPerEditor ?? 64;
    // Reusing connections is what keeps throughput near direct access; the bound keeps a burst
    // from opening thousands of them (requests beyond it wait for a free connection).
    this.#maxSockets = maxSockets;
    this.#agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets, scheduling: 'lifo' });
    this.#timeoutMs = options.timeoutMs ?? 60_000;
  }

  /**
   * Express-style middleware for the proxy paths; calls next() for any other path. Run it before
   * any body parser so bodies stream through; best in the HTTP server's request listener, ahead
   * of express, whose per-request set-up costs more than the proxying itself.
   */
  middleware(): (req: IncomingMessage, res: ServerResponse, next: Next) => void {
    return (req, res, next) => {
      const route = parseRoute(req);
      if (!route) {
        next();
        return;
      }
      route.target = this.#route(route.port, req);
      if (!route.target) {
        if (this.#unroutable?.(route.port, req, res)) return;
        writeError(res, apiError('EDITOR_NOT_FOUND', { port: route.port }));
        return;
      }
      if (this.#ports && isForwardedPath(route)) {
        void this.#ports.resolve(route).then((forwarded) => {
          if (res.destroyed) return; // the client left meanwhile
          if (forwarded instanceof HttpError) writeError(res, forwarded);
          else this.#send(req, res, forwarded);
        });
        return;
      }
      this.#send(req, res, route);
    };
  }

  #send(req: IncomingMessage, res: ServerResponse, route: Route): void {
    if (route.path === '') {
      // The editor's pages use relative URLs, which only resolve under the prefix with the slash.
      res.writeHead(308, { Location: `${route.prefix}/${route.search}` }).end();
      return;
    }
    this.#forward(req, res, route);
  }

  /** Takes a WebSocket upgrade for a proxy path (false for any other path), with the same checks. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const route = parseRoute(req);
    if (!route) return false;
    // Until the relay is set up nothing else listens for its errors (a client that left).
    socket.on('error', () => socket.destroy());
    route.target = this.#route(route.port, req);
    if (!route.target) {
      writeRawError(socket, apiError('EDITOR_NOT_FOUND', { port: route.port }));
      return true;
    }
    if (this.#ports && isForwardedPath(route)) {
      void this.#ports.resolve(route).then((forwarded) => {
        if (socket.destroyed) return;
        if (forwarded instanceof HttpError) writeRawError(socket, forwarded);
        else this.#upgrade(req, socket, head, forwarded);
      });
      return true;
    }
    this.#upgrade(req, socket, head, route);
    return true;
  }

  /** The upgrade sent on to the target, and its sockets relayed once it accepts. */
  #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, route: Route): void {
    const fail = (err: Error): void => {
      // The client left before the editor answered: nothing to tell, nothing to report.
      if (socket.destroyed) return;
      this.#report(err, req, route);
      // Before the 101 went out the client can still be told why; after it, only cut the relay.
      if (((socket as Socket).bytesWritten ?? 0) === 0) {
        writeRawError(socket, unavailable(route, unavailableCause(err)));
      } else {
        socket.destroy();
      }
    };
    const target = route.target!;
    const proxyReq = http.request({
      host: target.host,
      port: target.port,
      method: req.method,
      path: editorPath(req, route),
      headers: editorRequestHeaders(req, route.prefix, this.#observer?.socketMessage ? DROPPED_READ_UPGRADE_HEADERS : DROPPED_UPGRADE_HEADERS),
      // A forwarded port's upgrade gets a connection of its own, never one kept from another server's.
      agent: route.forwarded === undefined ? this.#agent : false,
      ...(target.host === LOOPBACKS ? { lookup: LOOPBACK_LOOKUP, autoSelectFamily: true } : {}),
    });
    proxyReq.on('error', fail);
    const abandon = (): void => void proxyReq.destroy();
    socket.once('close', abandon);
    // Not an upgrade (the editor refused it, say): its answer goes to the client, its body as Node
    // decoded it (no longer chunked), ended by closing the connection, which the head says.
    proxyReq.on('response', (proxyRes) => {
      if (socket.destroyed) return proxyRes.destroy();
      const headers: string[] = [];
      for (let i = 0; i < proxyRes.rawHeaders.length; i += 2) {
        if (!HOP_BY_HOP_RESPONSE.has(proxyRes.rawHeaders[i].toLowerCase())) headers.push(proxyRes.rawHeaders[i], proxyRes.rawHeaders[i + 1]);
      }
      headers.push('Connection', 'close');
      socket.write(rawHead(`HTTP/1.1 ${proxyRes.statusCode} ${proxyRes.statusMessage}`, headers));
      proxyRes.on('error', () => socket.destroy());
      proxyRes.pipe(socket);
    });
    proxyReq.on('upgrade', (proxyRes, editorSocket: Socket, editorHead: Buffer) => {
      socket.removeListener('close', abandon);
      if (socket.destroyed) return editorSocket.destroy();
      socket.write(rawHead('HTTP/1.1 101 Switching Protocols', proxyRes.rawHeaders));
      relay(socket as Socket, editorSocket, route.port, head, editorHead, this.#observer, socketProtocol(req.url));
    });
    proxyReq.end();
  }

  /** Connections to editors: in use, and idle in the pool. */
  stats(): { sockets: number; freeSockets: number } {
    const count = (pools: NodeJS.ReadOnlyDict<unknown[]>): number =>
      Object.values(pools).reduce((sum, list) => sum + (list?.length ?? 0), 0);
    let sockets = count(this.#agent.sockets);
    let freeSockets = count(this.#agent.freeSockets);
    for (const pool of this.#pools.values()) {
      const { connected, free } = pool.stats;
      sockets += connected - free;
      freeSockets += free;
    }
    return { sockets, freeSockets };
  }

  /** Closes every pooled connection. */
  close(): void {
    this.#agent.destroy();
    for (const pool of this.#pools.values()) pool.destroy().catch(() => {});
    this.#pools.clear();
  }

  #pool(route: Route): Pool {
    const target = route.target!;
    // A forwarded port's connections are its server's alone: one kept open to a program that
    // stopped listening must not serve another server that listens on the port next.
    const key = `${route.forwarded === undefined ? '' : `${route.port}>`}${target.host}:${target.port}`;
    let pool = this.#pools.get(key);
    if (!pool) {
      const Pool = loadPool();
      const host = target.host.includes(':') ? `[${target.host}]` : target.host;
      // The timeouts: an editor silent this long before its headers, or between two chunks of its body.
      pool = new Pool(`http://${host}:${target.port}`, {
        connections: this.#maxSockets,
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
        ...(target.host === LOOPBACKS ? { connect: { lookup: LOOPBACK_LOOKUP, autoSelectFamily: true } } : {}),
      });
      this.#pools.set(key, pool);
    }
    return pool;
  }

  /** One request to the editor over its pool, its body streamed there and the answer streamed back. */
  #forward(req: IncomingMessage, res: ServerResponse, route: Route): void {
    const headers = editorRequestHeaders(req, route.prefix, DROPPED_FOR_UNDICI);
    const length = req.headers['content-length'];
    // A request without Content-Length or Transfer-Encoding has no body (RFC 9112 6.3).
    const hasBody = length !== undefined ? length !== '0' : req.headers['transfer-encoding'] !== undefined;
    // Without a body DELETE and OPTIONS would go without any length; some servers wait for one.
    if (length === undefined && !hasBody && (req.method === 'DELETE' || req.method === 'OPTIONS')) headers.push('content-length', '0');
    const forwarding = new Forwarding(res, route, this.#timeoutMs, (err) => this.#failRequest(err, req, res, route));
    const observer = this.#observer;
    const socket = req.socket;
    const read = observer ? socket.bytesRead : 0;
    const written = observer ? socket.bytesWritten : 0;
    res.once('close', () => {
      // The client left before the answer was complete: give up the editor's side too.
      if (!forwarding.done) forwarding.controller?.abort(new Error('the client closed the connection'));
      // Bytes counted on the client's connection, so that no stream is touched: in, the body's
      // Content-Length (what arrived with the headers was read already), else what was read
      // meanwhile; out, what was written meanwhile.
      if (observer) {
        const declared = Number(length);
        observer.request(route.port, res.statusCode, declared > 0 ? declared : socket.bytesRead - read, socket.bytesWritten - written);
      }
    });
    res.on('drain', () => forwarding.controller?.resume());
    this.#pool(route).dispatch(
      { method: req.method ?? 'GET', path: editorPath(req, route), headers, body: hasBody ? req : null },
      forwarding,
    );
  }

  #failRequest(err: Error, req: IncomingMessage, res: ServerResponse, route: Route): void {
    this.#report(err, req, route);
    if (res.writableEnded) return;
    // Too late for a status: cut the response so the browser sees a failure, not a short body.
    if (res.headersSent) res.destroy();
    else writeError(res, unavailable(route, unavailableCause(err)));
  }

  // configurable-http-proxy style: expected network failures in one line, anything else with its stack.
  #report(err: Error, req: IncomingMessage, route: Route): void {
    const code = (err as NodeJS.ErrnoException).code;
    const what = `${req.method} ${route.prefix}${req.url} -> ${route.target?.host}:${route.target?.port}`;
    if (code && KNOWN_NETWORK_ERRORS.has(code)) this.#log(`proxy: ${code} on ${what}`);
    else this.#log(`proxy: error on ${what}: ${err.stack ?? err}`);
  }
}
