// The editor proxy: /vscode/{port}/… and /editor/{port}/… to the endpoint of the managed, running
// editor on {port} (the runtime says where it answers), and nowhere else.

import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import httpProxy from 'http-proxy';
import { writeError, writeRawError } from '../core/errors.ts';
import type { EditorEndpoint } from '../runtime/processes.ts';

/** Cookies whose name starts with this belong to the service and never reach an editor. */
export const SERVICE_COOKIE_PREFIX = 'devbox';

/**
 * Cookies of the service and of the Databricks Apps front door (`__Host-databricksapps`, its
 * session, and `__Host-databricksapps_csrf`), in any case and with or without a `__Host-` or
 * `__Secure-` prefix: an editor runs the user's code, which must not get them.
 */
const CREDENTIAL_COOKIE = new RegExp(`^(__host-|__secure-)?(${SERVICE_COOKIE_PREFIX}|databricksapps)`, 'i');

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

/** Streams HTTP requests and WebSocket upgrades to editors over a bounded keep-alive pool. */
export class EditorProxy {
  readonly #route: EditorProxyOptions['route'];
  readonly #log: (message: string) => void;
  readonly #agent: http.Agent;
  readonly #proxy: httpProxy;
  readonly #routes = new WeakMap<IncomingMessage, Route>();
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
    this.#agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets, scheduling: 'lifo' });
    this.#proxy = httpProxy.createProxyServer({ agent: this.#agent });
    // Not http-proxy's proxyTimeout: that one fails as a bare ECONNRESET, indistinguishable from a crash.
    const timeoutMs = options.timeoutMs ?? 60_000;
    this.#proxy.on('proxyReq', (proxyReq) => {
      proxyReq.setTimeout(timeoutMs, () => {
        const error: NodeJS.ErrnoException = new Error(`no answer within ${timeoutMs} ms`);
        error.code = 'ETIMEDOUT';
        proxyReq.destroy(error);
      });
    });
    this.#proxy.on('proxyRes', (proxyRes, req) => {
      const route = this.#routes.get(req);
      const location = proxyRes.headers.location;
      if (route && location) proxyRes.headers.location = rewriteLocation(location, route);
    });
    const observer = this.#observer;
    if (observer) {
      // Registered before http-proxy's own 'upgrade' listener (it adds it after this event), so
      // both data listeners are on before any byte flows through the pipes it sets up next.
      this.#proxy.on('proxyReqWs', (proxyReq, req, socket) => {
        const port = this.#routes.get(req)?.port;
        if (port === undefined) return;
        proxyReq.once('upgrade', (_res, proxySocket: Duplex) => {
          observer.socketOpened(port);
          socket.on('data', (chunk: Buffer) => observer.socketData(port, chunk.length, true));
          proxySocket.on('data', (chunk: Buffer) => observer.socketData(port, chunk.length, false));
          socket.once('close', () => observer.socketClosed(port));
        });
      });
    }
    // Every call passes its own error callback; this only guards against an unhandled 'error'.
    this.#proxy.on('error', (err) => this.#log(`proxy: ${err.stack ?? err}`));
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
      this.#prepare(req, route);
      if (this.#observer) this.#observe(req, res, route.port);
      this.#proxy.web(
        req,
        res,
        // Connection is hop-by-hop: a client's "close" must not cost the pooled editor connection.
        { target: route.target, headers: { connection: 'keep-alive' } },
        (err) => this.#failRequest(err, req, res as ServerResponse, route),
      );
    };
  }

  /** Takes a WebSocket upgrade for a proxy path (false for any other path), with the same checks. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const route = parseRoute(req);
    if (!route) return false;
    // Until http-proxy pipes the socket nothing else listens for its errors (a client that left).
    socket.on('error', () => socket.destroy());
    route.target = this.#route(route.port, req);
    if (!route.target) {
      writeRawError(socket, 404, 'EDITOR_NOT_FOUND', notRoutableMessage(route.port));
      return true;
    }
    this.#prepare(req, route);
    this.#proxy.ws(req, socket, head, { target: route.target }, (err) => {
      this.#report(err, req, route);
      if (socket.destroyed) return;
      // Before the 101 went out the client can still be told why; after it, only cut the pipe.
      if (((socket as Socket).bytesWritten ?? 0) === 0) {
        writeRawError(socket, 502, 'EDITOR_UNAVAILABLE', unavailableMessage(route.port, err));
      } else {
        socket.destroy();
      }
    });
    return true;
  }

  /** Connections to editors: in use, and idle in the pool. */
  stats(): { sockets: number; freeSockets: number } {
    const count = (pools: NodeJS.ReadOnlyDict<unknown[]>): number =>
      Object.values(pools).reduce((sum, list) => sum + (list?.length ?? 0), 0);
    return { sockets: count(this.#agent.sockets), freeSockets: count(this.#agent.freeSockets) };
  }

  /** Closes every pooled connection. */
  close(): void {
    this.#agent.destroy();
    this.#proxy.close();
  }

  /**
   * Reports the request once its response is done, with bytes counted on the client's connection
   * so that no stream is touched: in, the body's Content-Length (what arrived with the headers
   * was read already), else what was read meanwhile; out, what was written meanwhile.
   */
  #observe(req: IncomingMessage, res: ServerResponse, port: number): void {
    const socket = req.socket;
    const read = socket.bytesRead;
    const written = socket.bytesWritten;
    const declared = Number(req.headers['content-length']);
    res.once('close', () => this.#observer!.request(
      port, res.statusCode, declared > 0 ? declared : socket.bytesRead - read, socket.bytesWritten - written,
    ));
  }

  /** Strips the prefix and every credential meant for the service, and says where the request came from. */
  #prepare(req: IncomingMessage, route: Route): void {
    this.#routes.set(req, route);
    req.url = `${route.path || '/'}${route.search}`;
    const headers = req.headers;
    for (const name of CREDENTIAL_HEADERS) delete headers[name];
    if (headers.cookie !== undefined) {
      const kept = headers.cookie
        .split(';')
        .filter((cookie) => !CREDENTIAL_COOKIE.test(cookie.trim()))
        .join(';')
        .trim();
      if (kept === '') delete headers.cookie;
      else headers.cookie = kept;
    }
    // A front proxy (Databricks Apps) sets these first; keep its values, they describe the browser.
    headers['x-forwarded-proto'] ??= (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
    // An HTTP/1.0 request may come without Host: then there is no original host to tell.
    if (headers.host !== undefined) headers['x-forwarded-host'] ??= headers.host;
    headers['x-forwarded-prefix'] = route.prefix;
    const client = req.socket.remoteAddress;
    if (client) {
      const previous = headers['x-forwarded-for'];
      headers['x-forwarded-for'] = previous ? `${previous}, ${client}` : client;
    }
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
