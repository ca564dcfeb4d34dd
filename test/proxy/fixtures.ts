// Shared by the proxy tests: a real HTTP + WebSocket target standing in for code-server, and the
// service side, an express app with the EditorProxy mounted first, both on 127.0.0.1:0.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { WebSocketServer, type WebSocket } from 'ws';
import { EditorProxy, type EditorProxyOptions } from '../../src/proxy/editor-proxy.ts';
import { afterEach, beforeEach } from 'vitest';

export interface SeenRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  bodyBytes: number;
}

export interface Target {
  port: number;
  /** Every HTTP request and WebSocket upgrade that reached the target. */
  hits: number;
  requests: SeenRequest[];
  /** Headers of every WebSocket upgrade that reached the target. */
  upgrades: http.IncomingHttpHeaders[];
  close: () => Promise<void>;
}

/**
 * An editor stand-in. `/redirect?to=X` answers 302 to X, `/echo` streams the body back as it
 * arrives, any other path answers JSON describing the request; WebSockets echo every message.
 */
export async function startTarget(host = '127.0.0.1'): Promise<Target> {
  const target: Target = { port: 0, hits: 0, requests: [], upgrades: [], close: async () => {} };
  const server = http.createServer((req, res) => {
    target.hits++;
    const url = new URL(req.url ?? '/', 'http://target');
    if (url.pathname === '/echo') {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      req.pipe(res);
      return;
    }
    if (url.pathname === '/redirect') {
      res.writeHead(302, { Location: url.searchParams.get('to') ?? '/' }).end();
      return;
    }
    let bodyBytes = 0;
    req.on('data', (chunk: Buffer) => {
      bodyBytes += chunk.length;
    });
    req.on('end', () => {
      const seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, bodyBytes };
      target.requests.push(seen);
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(req.method === 'HEAD' ? undefined : JSON.stringify(seen));
    });
  });
  const wss = new WebSocketServer({ server });
  wss.on('headers', (_headers, req) => {
    target.hits++;
    target.upgrades.push(req.headers);
  });
  wss.on('connection', (ws, req) => {
    ws.on('message', (data, isBinary) => ws.send(isBinary ? data : `echo ${req.url}: ${data}`, { binary: isBinary }));
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  target.port = (server.address() as AddressInfo).port;
  target.close = async () => {
    for (const client of wss.clients) client.terminate();
    wss.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return target;
}

export interface Service {
  base: string;
  port: number;
  proxy: EditorProxy;
  logged: string[];
  close: () => Promise<void>;
}

/**
 * The service: EditorProxy before express.json, then an API route to show that non-proxy paths
 * fall through. `isRoutable` stands in for the controller's rule (src/service.ts), which also
 * refuses the service's own port: that part is tested against the real service in test/api.
 * A routable port's editor answers on 127.0.0.1 unless `options.route` says where.
 */
export async function startService(isRoutable: (port: number) => boolean, options: Partial<EditorProxyOptions> = {}): Promise<Service> {
  const logged: string[] = [];
  const route = (port: number) => (isRoutable(port) ? { host: '127.0.0.1', port } : undefined);
  const proxy = new EditorProxy({ route, log: (line) => logged.push(line), ...options });
  const app = express();
  app.use(proxy.middleware());
  app.use(express.json());
  app.get('/servers', (_req, res) => {
    res.json([]);
  });
  const server = http.createServer(app);
  server.on('upgrade', (req, socket, head) => {
    if (!proxy.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const servicePort = (server.address() as AddressInfo).port;
  return {
    base: `http://127.0.0.1:${servicePort}`,
    port: servicePort,
    proxy,
    logged,
    close: async () => {
      proxy.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A request with full control over method, headers and body; resolves with status, headers and text. */
export function request(
  url: string,
  options: http.RequestOptions & { body?: string } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const { body, ...rest } = options;
    // A body always carries its length: Node would send a DELETE body without any framing.
    const headers = body === undefined ? rest.headers : { ...rest.headers, 'Content-Length': Buffer.byteLength(body) };
    const req = http.request(url, { agent: false, ...rest, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * A target and a proxy service routing only to it, fresh for each test of the calling describe
 * block: read them from the returned object inside tests. Sockets the test pushes onto `sockets`
 * are terminated after it.
 */
export function proxyToTarget(): { target: Target; service: Service; sockets: WebSocket[] } {
  const ctx = {} as { target: Target; service: Service; sockets: WebSocket[] };
  beforeEach(async () => {
    ctx.target = await startTarget();
    ctx.service = await startService((port) => port === ctx.target.port);
    ctx.sockets = [];
  });
  afterEach(async () => {
    for (const socket of ctx.sockets) socket.terminate();
    await ctx.service.close();
    await ctx.target.close();
  });
  return ctx;
}
