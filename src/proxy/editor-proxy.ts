// The editor proxy: /vscode/{port}/… and /editor/{port}/… to the endpoint of the managed, running
// editor on {port} (the runtime says where it answers), and nowhere else.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Dispatcher, Pool } from 'undici';
import { writeError, writeRawError } from '../core/errors.ts';
// Not an ESM import of node:http, which would load Node's own bundled undici (see core/http.ts).
import * as http from '../core/http.ts';
import type { EditorEndpoint } from '../runtime/processes.ts';
import { requiredOnFirstUse } from '../core/first-use.ts';

/** Cookies whose name starts with this belong to the service and never reach an editor. */
export const SERVICE_COOKIE_PREFIX = 'devbox';

/**
 * Cookies of the service and of the Databricks Apps front door (`__Host-databricksapps`, its
 * session, and `__Host-databricksapps_csrf`), in any case and with or without a `__Host-` or
 * `__Secure-` prefix: an editor runs the user's code, which must not get them.
 */
const CREDENTIAL_COOKIE = new RegExp(`^(__host-|__secure-)?(${SERVICE_COOKIE_PREFIX}|databricksapps)`, 'i');
/** Whether a Cookie header may hold any such cookie: most do not, and are passed on without splitting. */
const CREDENTIAL_COOKIE_ANYWHERE = new RegExp(`${SERVICE_COOKIE_PREFIX}|databricksapps`, 'i');

/** Credentials meant for the service or a proxy in front of it. */
const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'x-forwarded-access-token'];

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
}

interface Route {
  /** `/vscode/8012` or `/editor/8012`. */
  prefix: string;
  port: number;
  /** Where the editor answers, once the port is known to be routable. */
  target?: EditorEndpoint;
  /** The path after the prefix, '' when there is none. */
  path: string;
  /** `?…` or ''. */
  search: string;
}

type Next = (err?: unknown) => void;

const ROUTE = /^\/(vscode|editor)\/(\d{1,5})(\/.*)?$/;
// EPIPE: the editor answered and closed before the whole request body was sent.
const KNOWN_NETWORK_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE']);

/**
 * Request headers never passed to an editor: credentials, and hop-by-hop ones (the connection to
 * the editor is the pool's own; the service already answered `Expect: 100-continue`). An upgrade
 * keeps Connection and Upgrade, which are what it asks for.
 */
const DROPPED_REQUEST_HEADERS = new Set([...CREDENTIAL_HEADERS, 'connection', 'keep-alive', 'proxy-connection', 'upgrade', 'expect']);
const DROPPED_UPGRADE_HEADERS = new Set([...CREDENTIAL_HEADERS, 'keep-alive', 'proxy-connection', 'expect']);
/** Response headers that describe the editor's connection, not the client's: Node frames the response to the client itself. */
const HOP_BY_HOP_RESPONSE = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'trailer', 'upgrade']);
/** undici frames the request itself (chunked when the body has no length) and refuses these. */
const DROPPED_FOR_UNDICI = new Set([...DROPPED_REQUEST_HEADERS, 'transfer-encoding']);

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

  constructor(options: EditorProxyOptions) {
    this.#route = options.route;
    this.#observer = options.observer;
    this.#unroutable = options.unroutable;
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
        writeError(res, 404, 'EDITOR_NOT_FOUND', notRoutableMessage(route.port));
        return;
      }
      if (route.path === '') {
        // The editor's pages use relative URLs, which only resolve under the prefix with the slash.
        res.writeHead(308, { Location: `${route.prefix}/${route.search}` }).end();
        return;
      }
      this.#forward(req, res, route);
    };
  }

  /** Takes a WebSocket upgrade for a proxy path (false for any other path), with the same checks. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const route = parseRoute(req);
    if (!route) return false;
    // Until the relay is set up nothing else listens for its errors (a client that left).
    socket.on('error', () => socket.destroy());
    route.target = this.#route(route.port, req);
    if (!route.target) {
      writeRawError(socket, 404, 'EDITOR_NOT_FOUND', notRoutableMessage(route.port));
      return true;
    }
    const fail = (err: Error): void => {
      // The client left before the editor answered: nothing to tell, nothing to report.
      if (socket.destroyed) return;
      this.#report(err, req, route);
      // Before the 101 went out the client can still be told why; after it, only cut the relay.
      if (((socket as Socket).bytesWritten ?? 0) === 0) {
        writeRawError(socket, 502, 'EDITOR_UNAVAILABLE', unavailableMessage(route.port, err));
      } else {
        socket.destroy();
      }
    };
    const proxyReq = http.request({
      host: route.target.host,
      port: route.target.port,
      method: req.method,
      path: this.#rewrite(req, route),
      headers: this.#headers(req, route, DROPPED_UPGRADE_HEADERS),
      agent: this.#agent,
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
      this.#relay(socket as Socket, editorSocket, route.port, head, editorHead);
    });
    proxyReq.end();
    return true;
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

  #pool(target: EditorEndpoint): Pool {
    const key = `${target.host}:${target.port}`;
    let pool = this.#pools.get(key);
    if (!pool) {
      const Pool = loadPool();
      const host = target.host.includes(':') ? `[${target.host}]` : target.host;
      // The timeouts: an editor silent this long before its headers, or between two chunks of its body.
      pool = new Pool(`http://${host}:${target.port}`, {
        connections: this.#maxSockets,
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
      });
      this.#pools.set(key, pool);
    }
    return pool;
  }

  /** One request to the editor over its pool, its body streamed there and the answer streamed back. */
  #forward(req: IncomingMessage, res: ServerResponse, route: Route): void {
    const headers = this.#headers(req, route, DROPPED_FOR_UNDICI);
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
    this.#pool(route.target!).dispatch(
      { method: req.method ?? 'GET', path: this.#rewrite(req, route), headers, body: hasBody ? req : null },
      forwarding,
    );
  }

  /**
   * Relays an upgraded connection both ways: each chunk written on as it arrives, the sender paused
   * while the receiver's buffer is full, Nagle off on both (small frames go out at once).
   */
  #relay(client: Socket, editor: Socket, port: number, head: Buffer, editorHead: Buffer): void {
    const observer = this.#observer;
    for (const socket of [client, editor]) {
      socket.setTimeout?.(0);
      socket.setNoDelay?.(true);
      socket.setKeepAlive?.(true, 0);
    }
    const pipeOneWay = (from: Socket, to: Socket, fromClient: boolean): void => {
      from.on('data', (chunk: Buffer) => {
        observer?.socketData(port, chunk.length, fromClient);
        if (!to.write(chunk)) from.pause();
      });
      to.on('drain', () => from.resume());
      from.on('end', () => to.end());
      from.resume(); // a 'data' listener alone does not restart a socket paused explicitly
    };
    const destroyBoth = (): void => {
      client.destroy();
      editor.destroy();
    };
    client.on('error', destroyBoth);
    editor.on('error', destroyBoth);
    client.once('close', destroyBoth);
    editor.once('close', destroyBoth);
    if (observer) {
      observer.socketOpened(port);
      client.once('close', () => observer.socketClosed(port));
    }
    if (editorHead.length > 0) {
      observer?.socketData(port, editorHead.length, false);
      client.write(editorHead);
    }
    if (head.length > 0) {
      observer?.socketData(port, head.length, true);
      editor.write(head);
    }
    pipeOneWay(client, editor, true);
    pipeOneWay(editor, client, false);
  }

  /** The path the editor sees: the prefix stripped (req.url too, for reports). */
  #rewrite(req: IncomingMessage, route: Route): string {
    req.url = `${route.path || '/'}${route.search}`;
    return req.url;
  }

  /**
   * The request's headers for the editor as a flat list: without `dropped` and the service's
   * cookies, with where the request came from (X-Forwarded-For, -Proto, -Host, -Prefix).
   */
  #headers(req: IncomingMessage, route: Route, dropped: Set<string>): string[] {
    const headers = req.headers;
    const out: string[] = [];
    let forwardedProto = false;
    let forwardedHost = false;
    let forwardedFor: string | undefined;
    for (const name in headers) {
      const value = headers[name];
      if (value === undefined || dropped.has(name)) continue;
      switch (name) {
        case 'cookie': {
          const kept = keptCookies(value as string);
          if (kept !== '') out.push(name, kept);
          continue;
        }
        case 'x-forwarded-for':
          forwardedFor = value as string;
          continue;
        case 'x-forwarded-prefix':
          continue;
        case 'x-forwarded-proto':
          forwardedProto = true;
          break;
        case 'x-forwarded-host':
          forwardedHost = true;
          break;
      }
      if (typeof value === 'string') out.push(name, value);
      else for (const one of value) out.push(name, one);
    }
    // A front proxy (Databricks Apps) sets these first; keep its values, they describe the browser.
    if (!forwardedProto) out.push('x-forwarded-proto', (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http');
    // An HTTP/1.0 request may come without Host: then there is no original host to tell.
    if (!forwardedHost && headers.host !== undefined) out.push('x-forwarded-host', headers.host);
    out.push('x-forwarded-prefix', route.prefix);
    const client = req.socket.remoteAddress;
    if (client) out.push('x-forwarded-for', forwardedFor ? `${forwardedFor}, ${client}` : client);
    else if (forwardedFor) out.push('x-forwarded-for', forwardedFor);
    return out;
  }

  #failRequest(err: Error, req: IncomingMessage, res: ServerResponse, route: Route): void {
    this.#report(err, req, route);
    if (res.writableEnded) return;
    // Too late for a status: cut the response so the browser sees a failure, not a short body.
    if (res.headersSent) res.destroy();
    else writeError(res, 502, 'EDITOR_UNAVAILABLE', unavailableMessage(route.port, err));
  }

  // configurable-http-proxy style: expected network failures in one line, anything else with its stack.
  #report(err: Error, req: IncomingMessage, route: Route): void {
    const code = (err as NodeJS.ErrnoException).code;
    const what = `${req.method} ${route.prefix}${req.url} -> ${route.target?.host}:${route.target?.port}`;
    if (code && KNOWN_NETWORK_ERRORS.has(code)) this.#log(`proxy: ${code} on ${what}`);
    else this.#log(`proxy: error on ${what}: ${err.stack ?? err}`);
  }
}

/** One proxied request as undici's handler: the editor's answer written to the client as it comes. */
class Forwarding implements Dispatcher.DispatchHandler {
  controller: Dispatcher.DispatchController | undefined;
  /** The editor's side is over: answered in full, or failed. */
  done = false;

  readonly res: ServerResponse;
  readonly route: Route;
  readonly timeoutMs: number;
  readonly fail: (err: Error) => void;

  constructor(res: ServerResponse, route: Route, timeoutMs: number, fail: (err: Error) => void) {
    this.res = res;
    this.route = route;
    this.timeoutMs = timeoutMs;
    this.fail = fail;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
  }

  onResponseStart(controller: Dispatcher.DispatchController, status: number, headers: http.IncomingHttpHeaders, message?: string): void {
    if (status < 200) return; // 1xx: informational, Node answers the client's own
    const out: string[] = [];
    for (const name in headers) {
      const value = headers[name];
      if (value === undefined || HOP_BY_HOP_RESPONSE.has(name)) continue;
      if (typeof value !== 'string') for (const one of value) out.push(name, one);
      else out.push(name, name === 'location' ? rewriteLocation(value, this.route) : value);
    }
    try {
      this.res.writeHead(status, message, out);
    } catch (err) {
      // Node refuses what the editor's parser let through (a byte above 0x7e in the status text,
      // say): the editor's side is given up and the client told why. writeHead kept the refused
      // status text, which the 502 would repeat: back to the default.
      this.res.statusMessage = '';
      controller.abort(new Error(`its answer's status line or headers cannot be passed on: ${(err as Error).message}`));
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    // Backpressure: the client's 'drain' resumes it.
    if (!this.res.write(chunk)) controller.pause();
  }

  onResponseEnd(): void {
    this.done = true;
    this.res.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.done = true;
    // The client left first (its close aborted this request): nothing to answer, nothing to report.
    if (this.res.destroyed && !this.res.writableFinished) return;
    this.fail(asNetworkError(err, this.timeoutMs));
  }
}

/** undici's timeouts and closed sockets under the codes Node's client uses (and the log expects). */
function asNetworkError(err: Error, timeoutMs: number): Error {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT', cause: err });
  }
  if (code === 'UND_ERR_SOCKET') return Object.assign(new Error(err.message), { code: 'ECONNRESET', cause: err });
  return err;
}

/** The editor's cookies only: the service's and the front door's never reach it. */
function keptCookies(cookie: string): string {
  if (!CREDENTIAL_COOKIE_ANYWHERE.test(cookie)) return cookie;
  return cookie
    .split(';')
    .filter((one) => !CREDENTIAL_COOKIE.test(one.trim()))
    .join(';')
    .trim();
}

/** A status line and raw headers, as written on an upgraded (or refused) connection. */
function rawHead(statusLine: string, raw: string[]): string {
  let head = `${statusLine}\r\n`;
  for (let i = 0; i < raw.length; i += 2) head += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return `${head}\r\n`;
}

/** Whether a request target is one of the proxy's paths (`/vscode/{port}…`, `/editor/{port}…`), which the API's rules do not cover. */
export function isEditorPath(target: string | undefined): boolean {
  const url = target ?? '/';
  const query = url.indexOf('?');
  return ROUTE.test(query < 0 ? url : url.slice(0, query));
}

function parseRoute(req: IncomingMessage): Route | undefined {
  // Express rewrites req.url under a mount path; the original is the full path the client asked for.
  const url = (req as { originalUrl?: string }).originalUrl ?? req.url ?? '/';
  const query = url.indexOf('?');
  const pathname = query < 0 ? url : url.slice(0, query);
  const match = ROUTE.exec(pathname);
  if (!match) return undefined;
  return {
    prefix: `/${match[1]}/${match[2]}`,
    port: Number(match[2]),
    path: match[3] ?? '',
    search: query < 0 ? '' : url.slice(query),
  };
}

/** Keeps an editor's redirects under the proxy prefix: absolute paths and its own address (or loopback). */
function rewriteLocation(location: string, route: Route): string {
  if (location.startsWith('/') && !location.startsWith('//')) {
    return location.startsWith(`${route.prefix}/`) ? location : `${route.prefix}${location}`;
  }
  // Relative locations already resolve under the prefix in the browser.
  if (!/^https?:\/\//i.test(location) || !URL.canParse(location)) return location;
  const url = new URL(location);
  const own = url.hostname === route.target?.host || url.hostname === '127.0.0.1' || url.hostname === 'localhost';
  if (!own || url.port !== String(route.target?.port ?? route.port)) return location;
  return `${route.prefix}${url.pathname}${url.search}${url.hash}`;
}

const notRoutableMessage = (port: number): string =>
  `no running editor server listens on port ${port}: start the server (POST /servers/{id}/start) ` +
  'and open the port listed by GET /servers';

const unavailableMessage = (port: number, err: Error): string =>
  `the editor on port ${port} did not answer (${(err as NodeJS.ErrnoException).code ?? err.message}); ` +
  'it may be starting or may have crashed: check GET /servers/{id}/health and its logs';
