// Puts the pieces together: manifests, controller, runtime, logs, proxy and the HTTP server.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { Router } from 'express';
import { createApp } from './api/app.ts';
import { serversRouter } from './api/servers.ts';
import type { Settings } from './config/settings.ts';
import { Controller } from './controller/controller.ts';
import { PortAllocator, portIsFree } from './controller/ports.ts';
import { Reconciler } from './controller/reconciler.ts';
import { CodeServerExtensionInstaller } from './extensions/installer.ts';
import { ManifestStore } from './manifests/store.ts';
import { resolveEditorBinary } from './runtime/editor-binary.ts';
import { ProcessRuntime, stopAllEditors } from './runtime/processes.ts';
import { StatsSampler } from './runtime/stats.ts';
import { DataLayout } from './workspace/layout.ts';
import { writeRawError } from './api/errors.ts';
import { hasForwardedIdentity, requireForwardedIdentity } from './api/identity.ts';
import { LogHub, LogStreamServer } from './logs/index.ts';
import { EditorProxy } from './proxy/index.ts';

export interface Service {
  url: string;
  port: number;
  server: Server;
  controller: Controller;
  logs: LogHub;
  proxy: EditorProxy;
  close(options?: { stopEditors?: boolean }): Promise<void>;
}

export async function startService(settings: Settings, log: (message: string) => void = console.log): Promise<Service> {
  const { config } = settings;
  const editor = resolveEditorBinary({ ...process.env, DEVBOX_EDITOR_BIN: settings.editorBin ?? '' });
  log(`editor: ${editor.path} (from ${editor.source})`);

  const layout = new DataLayout(settings.dataDir);
  const store = new ManifestStore(settings.manifestsDir);
  const runtime = new ProcessRuntime({ bin: editor.path, editorsDir: layout.editorsDir });
  // 256 KiB of recent lines per server in memory (about 2,000); the rest is in the log files.
  const logs = new LogHub({ logsDir: layout.logsDir, maxBufferBytes: 256 * 1024 });
  const ports = new PortAllocator(config.ports);
  let controller: Controller | undefined;
  const reconciler = new Reconciler({
    store, runtime, ports, layout, logs, config,
    portIsFree,
    installer: new CodeServerExtensionInstaller(editor.path),
    enqueue: (name) => controller?.enqueue(name),
    log,
  });
  controller = new Controller({
    store, runtime, reconciler,
    workers: config.controller.workers,
    resyncMs: config.controller.resyncSeconds * 1000,
    stopGraceMs: config.editor.stopGraceSeconds * 1000,
    log,
  });
  const stats = new StatsSampler(() => reconciler.pids(), config.controller.statsIntervalSeconds * 1000);

  let servicePort = settings.port;
  const proxy = new EditorProxy({
    // Only a running editor this service manages; never the service itself.
    isRoutable: (port) => port !== servicePort && reconciler.isRunningPort(port),
    log,
  });
  const logStreams = new LogStreamServer(logs, (id) => {
    const name = reconciler.nameOfUid(id);
    return name === undefined ? undefined : { name };
  });

  const startedAt = Date.now();
  const health = Router().get('/health', (_req, res) => {
    res.json({
      status: 'healthy',
      uptime_seconds: (Date.now() - startedAt) / 1000,
      servers: reconciler.records.size,
      editor: editor.path,
      memory_mb: serviceMemory(),
    });
  });
  const app = createApp({
    before: settings.requireIdentity ? [requireForwardedIdentity()] : [],
    routers: [
      health,
      serversRouter({
        store, controller, stats, logs, layout,
        extensionGroups: config.extensionGroups,
        startTimeoutMs: config.editor.startTimeoutSeconds * 1000,
        stopTimeoutMs: (config.editor.stopGraceSeconds + 10) * 1000,
      }),
    ],
    log,
  });

  await controller.start();
  stats.start();

  // Proxy paths are handled before express: its per-request set-up costs more than proxying.
  // A request without the identity the deployment requires goes to express, which refuses it.
  const toProxy = proxy.middleware();
  const server = createServer((req, res) => {
    if (settings.requireIdentity && !hasForwardedIdentity(req)) return app(req, res);
    res.setHeader('Access-Control-Allow-Origin', '*');
    toProxy(req, res, () => app(req, res));
  });
  server.keepAliveTimeout = 65_000;
  // Upgraded sockets leave the server's connection tracking: keep them, to close them on exit.
  const upgraded = new Set<Duplex>();
  // WebSocket upgrades pass the same checks as ordinary requests.
  server.on('upgrade', (req, socket, head) => {
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    if (settings.requireIdentity && !hasForwardedIdentity(req)) {
      writeRawError(socket, 401);
      return;
    }
    if (logStreams.handleUpgrade(req, socket, head) || proxy.handleUpgrade(req, socket, head)) return;
    writeRawError(socket, 404);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(settings.port, settings.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  servicePort = port;
  const url = `http://${settings.host.includes(':') ? `[${settings.host}]` : settings.host}:${port}`;

  return {
    url, port, server, controller, logs, proxy,
    async close(options = {}) {
      await logStreams.close();
      proxy.close();
      for (const socket of upgraded) socket.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await controller.stop();
      stats.dispose();
      if (options.stopEditors) await stopAllEditors(layout.editorsDir, config.editor.stopGraceSeconds * 1000);
      await logs.close();
    },
  };
}

/** The service's own memory: resident, the JavaScript heap in use and reserved, and buffers outside it. */
function serviceMemory(): { rss: number; heap_used: number; heap_total: number; external: number } {
  const { rss, heapUsed, heapTotal, external } = process.memoryUsage();
  const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
  return { rss: mb(rss), heap_used: mb(heapUsed), heap_total: mb(heapTotal), external: mb(external) };
}
