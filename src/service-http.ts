// The HTTP server and the path of every request through it, in order:
//   1. refusals before anything is read: a missing or foreign Host, a foreign Origin (the
//      editors' rule for their paths, the API's CORS policy for the rest);
//   2. deployed, a request without the platform's identity goes to express, which refuses it;
//   3. an editor's path (/vscode/{port}/) goes to the proxy;
//   4. GET /servers and GET /servers/{id} in their plain form are answered from the feed's
//      cached JSON (api/fast-reads.ts);
//   5. everything else is express's (the API, the dashboard).
// WebSocket upgrades pass the same refusals, then go to the log streams or an editor.
// Requests that arrive before the service is ready wait for it; none sees it half-started. Only
// GET /livez is answered at once, before all of this: the process is alive, however long the
// start takes (a liveness probe must not restart a service that is adopting its editors).
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { AllowedHosts, missingHost } from './api/allowed-hosts.ts';
import { fastReads } from './api/fast-reads.ts';
import { answerClientError, guardRequests, guardUpgrades } from './api/guards.ts';
import { hasForwardedIdentity, unauthenticated } from './api/identity.ts';
import { apiError } from './core/error-catalogue.ts';
import { writeError, writeRawError } from './core/errors.ts';
import { createServer } from './core/http.ts';
import { markRoute } from './metrics/api-timing.ts';
import { isEditorPath } from './proxy/index.ts';
import type { Parts } from './service-parts.ts';

export interface ServiceHttp {
  server: Server;
  /** Requests from now on are handled; those waiting are let through. */
  open(): void;
  /** The start failed: requests waiting are dropped. */
  fail(error: unknown): void;
  /** Closes the streams (clients are told), the proxy's connections and every socket, then the server; once (later calls wait for the first). */
  close(): Promise<void>;
}

export function serviceHttp(parts: Parts, log: (message: string) => void): ServiceHttp {
  const { settings, cors, proxy, feed, index, access, watch, logStreams, apiTimer, app } = parts;
  let ready = false;
  let markReady!: () => void;
  let markFailed!: (error: unknown) => void;
  const started = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    markFailed = reject;
  });
  started.catch(() => undefined);

  /** The headers of an answer to `req` written outside express: the API's CORS headers, none for an editor's path. */
  const apiHeaders = (req: IncomingMessage) => (isEditorPath(req.url) ? [] : cors.headersFor(req));
  // Locally, only names of this service (DNS rebinding), and editors only for pages of those names;
  // deployed, the platform's sign-in decides. The API's Origin rule is its CORS policy.
  const hosts = settings.requireIdentity ? undefined : new AllowedHosts({ boundHost: settings.host, extra: settings.allowedHosts });
  const refusal = (req: IncomingMessage, isUpgrade: boolean) => missingHost(req) ?? hosts?.hostRefusal(req)
    ?? (isEditorPath(req.url) ? hosts?.originRefusal(req, isUpgrade) : cors.refusal(req, isUpgrade));
  // Proxy paths are handled before express: its per-request set-up costs more than proxying.
  // Only express adds CORS headers: the API's, never an editor's.
  const toProxy = proxy.middleware();
  const reads = fastReads({
    feed, index, access, watch, cors,
    answered: apiTimer && ((req, res, route) => {
      markRoute(req, route);
      apiTimer(req as never, res as never, () => undefined);
    }),
  });
  // Express gives up on a request target it cannot parse (such as "http://et[/servers") without
  // running any handler of ours; that one is answered here, in the envelope.
  const api = app as unknown as (req: IncomingMessage, res: ServerResponse, last: () => void) => void;
  const toApp = (req: IncomingMessage, res: ServerResponse) => api(req, res, () => {
    if (res.headersSent) res.destroy();
    else writeError(res, apiError('BAD_REQUEST', 'the request target is not a path this service can read: send one such as /servers'), cors.headersFor(req));
  });
  const handle = guardRequests(log, (req: IncomingMessage, res: ServerResponse) => {
    const refused = refusal(req, false);
    if (refused) return writeError(res, refused, apiHeaders(req));
    if (settings.requireIdentity && !hasForwardedIdentity(req)) return toApp(req, res);
    toProxy(req, res, () => reads(req, res) || toApp(req, res));
  }, apiHeaders);
  const server = createServer({ requireHostHeader: false }, (req, res) => {
    if (isLiveness(req)) return answerLiveness(res, { status: 'alive' });
    if (ready) handle(req, res);
    else started.then(() => handle(req, res), () => res.destroy());
  });
  server.keepAliveTimeout = 65_000;
  // What Node answers by itself otherwise, in a bare 400 or 417: here in the error envelope.
  server.on('clientError', answerClientError);
  server.on('checkExpectation', (_req: IncomingMessage, res: ServerResponse) => {
    writeError(res, apiError('EXPECTATION_FAILED'));
  });
  // Node closes a CONNECT without a word when nobody listens: say why, in the envelope.
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    writeRawError(socket, apiError('METHOD_NOT_ALLOWED'));
  });
  // Upgraded sockets leave the server's connection tracking: keep them, to close them on exit.
  const upgraded = new Set<Duplex>();
  const upgrade = guardUpgrades(log, (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const refused = refusal(req, true) ?? (settings.requireIdentity && !hasForwardedIdentity(req) ? unauthenticated() : undefined);
    if (refused) return writeRawError(socket, refused, apiHeaders(req));
    if (logStreams.handleUpgrade(req, socket, head) || proxy.handleUpgrade(req, socket, head)) return;
    writeRawError(socket, apiError('NOT_FOUND', 'there is no WebSocket at this path: use /ws/logs, /ws/logs/{id} or /vscode/{port}/'), apiHeaders(req));
  }, apiHeaders);
  server.on('upgrade', (req, socket, head) => {
    // Node leaves an upgraded socket without an error listener: a client gone meanwhile must not end the process.
    socket.on('error', () => socket.destroy());
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    if (ready) upgrade(req, socket, head);
    else started.then(() => upgrade(req, socket, head), () => socket.destroy());
  });

  let closing: Promise<void> | undefined;
  return {
    server,
    open: () => {
      ready = true;
      markReady();
    },
    fail: (error) => markFailed(error),
    close: () => closing ??= (async () => {
      await logStreams.close();
      watch.close();
      proxy.close();
      for (const socket of upgraded) socket.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
    })(),
  };
}

/** GET /livez (with or without a query): the liveness probe's path, the same for a leader and a standby. */
export function isLiveness(req: IncomingMessage): boolean {
  return (req.method === 'GET' || req.method === 'HEAD') && (req.url === '/livez' || req.url?.startsWith('/livez?') === true);
}

export function answerLiveness(res: ServerResponse, body: { status: 'alive' | 'standby'; leader?: string }): void {
  const text = JSON.stringify(body);
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-store' }).end(text);
}
