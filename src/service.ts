// Puts the pieces together: manifests, controller, runtime, logs, proxy and the HTTP server.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { homedir } from 'node:os';
import { createServer } from './core/http.ts';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { createApp } from './api/app.ts';
import { dashboardRouter } from './api/dashboard.ts';
import { serversRouter } from './api/servers.ts';
import { LiveConfig } from './config/live-config.ts';
import type { Settings } from './config/settings.ts';
import { Controller } from './controller/controller.ts';
import { PortAllocator, portIsFree } from './controller/ports.ts';
import { Reconciler } from './controller/reconciler.ts';
import { sameData } from './core/equal.ts';
import type { HealthSection } from './core/health-section.ts';
import { CodeServerExtensionInstaller } from './extensions/installer.ts';
import { FolderLock, FolderLockedError } from './manifests/lock.ts';
import { ManifestStore } from './manifests/store.ts';
import { resolveEditorBinary, type EditorBinary } from './runtime/editor-binary.ts';
import { ProcessRuntime, stopAllEditors } from './runtime/processes.ts';
import { StatsSampler } from './runtime/stats.ts';
import { allowedGitSchemes } from './workspace/git-source.ts';
import { DataLayout } from './workspace/layout.ts';
import { AllowedHosts, missingHost } from './api/allowed-hosts.ts';
import { ApiCors } from './api/cors.ts';
import { writeError, writeRawError } from './core/errors.ts';
import { answerClientError, guardRequests, guardUpgrades } from './api/guards.ts';
import { hasForwardedIdentity, requireForwardedIdentity, unauthenticated } from './api/identity.ts';
import { ServerAccess } from './api/access.ts';
import { ServerFeed } from './api/server-feed.ts';
import { fastReads } from './api/fast-reads.ts';
import { markRoute } from './metrics/api-timing.ts';
import { WatchStreams } from './api/routes/watch.ts';
import { LogHub, LogStreamServer } from './logs/index.ts';
import { EditorProxy, isEditorPath } from './proxy/index.ts';
import { activityObserver, fanOut } from './proxy/observers.ts';
import { ActivityTracker } from './controller/activity.ts';
import { idleTimeoutSeconds } from './controller/ensure-idle.ts';
import { HeartbeatReader, heartbeatIntervalMs } from './controller/heartbeats.ts';
import { wakeOnOpen } from './proxy/wake-page.ts';
import type { EditorEndpoint } from './runtime/processes.ts';
import { ServiceMetrics } from './metrics/service-metrics.ts';
import { Capacity } from './controller/capacity.ts';
import { serviceHealthRouter } from './api/routes/service-health.ts';
import { openApiRouter } from './api/openapi/index.ts';
import { templatesHealth } from './api/routes/templates.ts';
import { TemplateCatalog } from './templates/catalog.ts';
import { configHealthSection, configRouter } from './api/routes/config.ts';
import { syncRouter } from './api/routes/sync.ts';
import { GitOps, gitOpsProblem } from './gitops/gitops.ts';
import { TokenKeeper } from './platform/token-keeper.ts';
import { RouterProcess } from './platform/router-process.ts';
import { distinctLabel } from './api/naming.ts';
import type { PersistenceService } from './persistence/service-persistence.ts';

/** What the health page says without a persistence target. */
const NOT_PERSISTED = 'not persisted: set DEVBOX_PERSIST_TO to a folder or dbfs:/Volumes/… to keep work across restarts';

export interface Service {
  url: string;
  port: number;
  server: Server;
  controller: Controller;
  logs: LogHub;
  proxy: EditorProxy;
  /** When each server was last used (proxy traffic, heartbeats). */
  activity: ActivityTracker;
  /** The editors' CPU and memory, sampled in the background. */
  stats: StatsSampler;
  /** The router's access token (deployed, or given Databricks credentials); else undefined. */
  assistant?: TokenKeeper;
  /** Snapshots of every server to the persistence target (DEVBOX_PERSIST_TO); undefined without one. */
  persistence?: PersistenceService;
  close(options?: { stopEditors?: boolean }): Promise<void>;
}

/** A start-up refusal whose message, one line, says what to change (`npm start` exits with code 2). */
export class StartupError extends Error {}

/**
 * Takes the manifests and data folders' locks, binds the port, and only then starts the controller: a
 * start that is refused adopts, starts and writes nothing. Requests that arrive in between wait
 * until the controller has started.
 */
export async function startService(settings: Settings, log: (message: string) => void = console.log): Promise<Service> {
  const editor = resolveEditorBinary({ ...process.env, DEVBOX_EDITOR_BIN: settings.editorBin ?? '' });
  log(`editor: ${editor.path} (from ${editor.source})`);
  // Before anything else touches the folders: one service per manifests folder, and per data folder.
  const locks: FolderLock[] = [];
  const release = async () => {
    for (const lock of locks.splice(0)) await lock.release();
  };
  try {
    for (const [dir, what, variable] of [
      [settings.manifestsDir, 'manifests', 'DEVBOX_MANIFESTS_DIR'],
      [settings.dataDir, 'data', 'DEVBOX_DATA_DIR'],
    ] as const) {
      try {
        locks.push(await FolderLock.acquire(dir));
      } catch (error) {
        if (!(error instanceof FolderLockedError)) throw error;
        throw new StartupError(`the ${what} folder ${error.message}: stop that service first, or set ${variable} to another folder`);
      }
    }
    return await serve(settings, editor, release, log);
  } catch (error) {
    await release();
    throw error;
  }
}

async function serve(settings: Settings, editor: EditorBinary, releaseLocks: () => Promise<void>, log: (message: string) => void): Promise<Service> {
  // `config` is what the service started with (for what only a restart changes); `live` follows the file.
  const { config } = settings;
  // Git sync settings (a URL, a ref, a person's templates folder) that cannot work refuse the start.
  const localMode = !settings.requireIdentity;
  // GitOps takes the schemes of the start-up config (its checkout's git is set up once).
  const gitSchemes = allowedGitSchemes(config.workspace, localMode);
  const gitopsRefusal = await gitOpsProblem(settings, gitSchemes);
  if (gitopsRefusal) throw new StartupError(gitopsRefusal);
  const live = new LiveConfig({ file: settings.configFile, initial: config, log });
  const layout = new DataLayout(settings.dataDir);
  const store = new ManifestStore(settings.manifestsDir, layout.statusDir);
  // claude-code-router for the editors' assistants (deployed, or DEVBOX_ROUTER=1); editors find its `ccr` first on their PATH.
  const router = settings.runRouter ? new RouterProcess({ homeDir: settings.platform?.homeDir ?? homedir(), port: settings.platform?.routerPort, dataDir: settings.dataDir, log }) : undefined;
  const runtime = new ProcessRuntime({
    bin: editor.path, editorsDir: layout.editorsDir,
    ...(router ? { env: { ...process.env, PATH: [router.binDir, process.env.PATH].filter(Boolean).join(':') } } : {}),
  });
  // 256 KiB of recent lines per server in memory (about 2,000); the rest is in the log files.
  const logs = new LogHub({ logsDir: layout.logsDir, maxBufferBytes: 256 * 1024 });
  const ports = new PortAllocator(config.ports);
  // When each server was last used: proxy traffic, and code-server's heartbeat (read by `heartbeats`).
  const activity = new ActivityTracker();
  let controller: Controller | undefined;
  // The capacity limits every start passes, the API's and the controller's alike (read from the live config).
  const capacity = new Capacity({
    config: () => live.current.capacity,
    running: () => reconciler.handles().keys(),
    memoryOf: (name) => stats.get(name)?.memoryMb,
    lastUsed: (name) => activity.lastActivity(name) ?? (Date.parse(reconciler.records.get(name)?.server?.status?.startTime ?? '') || undefined),
    enqueue: (name) => controller?.enqueue(name),
  });
  const installer = new CodeServerExtensionInstaller(editor.path);
  // Work kept across restarts: opened (its code loaded) only when a target is set; a target that
  // cannot be used refuses the start before anything is written.
  let persistence: PersistenceService | undefined;
  let controllerStarted = false;
  const reconciler = new Reconciler({
    store, runtime, ports, layout, logs, capacity, activity,
    get config() {
      return live.current;
    },
    get persistence() {
      return persistence;
    },
    gitSchemes: () => allowedGitSchemes(live.current.workspace, localMode),
    portIsFree,
    installer,
    enqueue: (name) => controller?.enqueue(name),
    log,
  });
  controller = new Controller({
    store, runtime, reconciler,
    workers: config.controller.workers,
    resyncMs: config.controller.resyncSeconds * 1000,
    get stopGraceMs() {
      return live.current.editor.stopGraceSeconds * 1000;
    },
    log,
  });
  const stats = new StatsSampler(() => reconciler.handles(), (handles) => runtime.usage(handles), config.controller.statsIntervalSeconds * 1000);
  // Room frees when an editor stops or gives memory back: the servers waiting for it are queued again.
  stats.onSample(() => capacity.noticeSample());
  reconciler.on('changed', () => capacity.noticeChange());
  reconciler.on('deleted', (name: string) => {
    capacity.forget(name);
    capacity.noticeChange();
  });

  // Who may see and drive which server: the config's `access` policy, read at every check.
  const access = new ServerAccess({ config: () => live.current, deployed: settings.requireIdentity });
  const serverNamed = (name: string | undefined) => (name === undefined ? undefined : reconciler.records.get(name)?.server);
  let servicePort = settings.port;
  reconciler.on('deleted', (name: string) => activity.forget(name));
  const touchPort = (port: number) => {
    const name = ports.owner(port);
    if (name !== undefined) activity.touch(name);
  };
  // GET /metrics (DEVBOX_METRICS=0: none, and nothing counted): plain numbers on the request path, read when scraped.
  const metrics = settings.metrics === false ? undefined : new ServiceMetrics({
    reconciler, stats, activity, logs,
    queueDepth: () => controller.queue.length,
    portOwner: (port) => ports.owner(port),
    streams: () => ({
      logs: { open: logStreams.state.clients, dropped: logStreams.state.dropped },
      watch: { open: watch.state.watchers, dropped: watch.state.dropped_slow },
    }),
  });
  if (settings.persist) {
    const { openPersistence, PersistTargetError } = await import('./persistence/service-open.ts');
    try {
      persistence = await openPersistence({
        persist: settings.persist, platform: settings.platform, dataDir: settings.dataDir,
        store, layout, installer, records: reconciler.records, logs, log,
        running: () => reconciler.handles().keys(),
        // Only once the controller has its uids: a name queued before would get a new one.
        enqueue: (name) => {
          if (controllerStarted) controller?.enqueue(name);
        },
        config: () => live.current,
        metrics: metrics?.persistence,
      });
    } catch (error) {
      if (error instanceof PersistTargetError) throw new StartupError(error.message);
      throw error;
    }
  }
  const proxy = new EditorProxy({
    // DEVBOX_ACTIVITY_TRACKING=0 with DEVBOX_METRICS=0 leaves the proxy without an observer (the benchmark's baseline).
    observer: fanOut([settings.activityTracking === false ? undefined : activityObserver(touchPort), metrics?.observer]),
    // Only a running editor this service manages, and the requester may reach; never the service itself.
    route: (port, req) => {
      const endpoint = port === servicePort ? undefined : reconciler.routeTo(port);
      return endpoint && access.sees(req, serverNamed(ports.owner(port))) ? endpoint : undefined;
    },
    // A server stopped for idleness starts when its editor is opened, by whoever may reach it.
    unroutable: wakeOnOpen({
      serverOn: (port, req) => {
        const name = port === servicePort ? undefined : ports.owner(port);
        const server = serverNamed(name);
        if (name === undefined || !server || !access.sees(req, server)) return undefined;
        return { name, displayName: distinctLabel(server, reconciler.records.values()) };
      },
      wakeState: (name) => reconciler.wakeState(name),
      wake: (name, why) => reconciler.wake(name, why),
    }),
    log,
  });
  // code-server's heartbeat of each running editor, read in the background as activity.
  const heartbeats = new HeartbeatReader({
    running: () => [...reconciler.records.keys()].flatMap((name) => {
      const endpoint = reconciler.records.get(name)?.server?.status?.phase === 'Running' ? reconciler.endpointOf(name) : undefined;
      return endpoint ? [[name, endpoint] as [string, EditorEndpoint]] : [];
    }),
    stillRunning: (name) => reconciler.endpointOf(name) !== undefined,
    activity,
    intervalMs: () => heartbeatIntervalMs([...reconciler.records.values()].flatMap((r) => (r.server ? [idleTimeoutSeconds(r.server.spec, live.current)] : []))),
  });
  // The API's cross-origin policy, from the config in use (api.allowedOrigins), for every answer the API makes.
  const cors = new ApiCors({ allowedOrigins: () => live.current.api.allowedOrigins });
  /** The headers of an answer to `req` written outside express: the API's CORS headers, none for an editor's path. */
  const apiHeaders = (req: IncomingMessage) => (isEditorPath(req.url) ? [] : cors.headersFor(req));
  const logStreams = new LogStreamServer(logs, (id, req) => {
    const name = reconciler.nameOfUid(id);
    return name !== undefined && access.sees(req, serverNamed(name)) ? { name } : undefined;
  }, {
    visibleTo: (req) => {
      const who = access.requester(req.headers);
      return (name) => access.allows(who, serverNamed(name));
    },
    responseHeaders: (req) => cors.headersFor(req),
  });

  // Sections of GET /health, added by the parts that have something to report.
  const healthSections = new Map<string, HealthSection>();
  // GET /servers?watch=1: records serialised once per change, shared by every stream.
  const feed = new ServerFeed(reconciler, stats, persistence);
  const watch = new WatchStreams({ feed, access, log });
  healthSections.set('watch', { read: () => watch.state });
  // A full fleet is not a problem: the section has figures only.
  healthSections.set('capacity', { read: () => capacity.read() });
  // The templates folder, read and watched; invalid files show in GET /templates and GET /health.
  const templates = new TemplateCatalog({
    dir: settings.templatesDir,
    // Read at each check: the config file can change while the service runs.
    get gitSchemes() {
      return allowedGitSchemes(live.current.workspace, localMode);
    },
    get maxArchiveBytes() {
      return live.current.workspace.maxUploadMb * 1024 * 1024;
    },
    log,
  });
  healthSections.set('templates', templatesHealth(templates));
  healthSections.set('config', configHealthSection(live));
  const persisted = persistence;
  healthSections.set('persistence', persisted
    ? { read: () => persisted.health(), problems: () => persisted.problems() }
    : { read: () => ({ target: null, state: 'disabled', message: NOT_PERSISTED }) });
  const gitops = new GitOps({
    settings, store, schemes: gitSchemes, timeoutMs: config.workspace.cloneTimeoutSeconds * 1000,
    enqueue: (name) => controller?.enqueue(name), requestDeletion: (name) => reconciler.requestDeletion(name), log,
  });
  healthSections.set('git_sync', gitops.healthSection());
  // The model-serving access token for the router: created in the background once the service
  // serves, so a slow or refusing workspace never holds up the editors.
  const assistant = settings.platform ? new TokenKeeper({ settings: settings.platform, log }) : undefined;
  if (assistant) healthSections.set('assistant', assistant);
  if (router) {
    healthSections.set('assistant_router', router.healthSection());
    // The router reads its config at start only: a new token takes effect with a new router.
    assistant?.onTokenWritten(() => router.restart('a new access token was written to its config'));
  }
  const health = serviceHealthRouter({ startedAt: Date.now(), editor: editor.path, servers: () => reconciler.records.size, sections: healthSections });
  const apiTimer = metrics?.apiTimer();
  const app = createApp({
    first: apiTimer ? [apiTimer] : [],
    cors: cors.middleware(),
    before: settings.requireIdentity ? [requireForwardedIdentity()] : [],
    routers: [
      health,
      // GET /openapi.json: this API described for machines.
      openApiRouter(),
      ...(metrics ? [metrics.router()] : []),
      configRouter(live, localMode),
      syncRouter(gitops),
      serversRouter({
        store, controller, stats, logs, layout,
        get extensionGroups() {
          return live.current.extensionGroups;
        },
        excludedPort: (port) => ports.excluded(port),
        ownerOf: (name) => gitops.ownerOf(name),
        access,
        capacity,
        watch,
        feed,
        persistence,
        get startTimeoutMs() {
          return live.current.editor.startTimeoutSeconds * 1000;
        },
        get stopTimeoutMs() {
          return (live.current.editor.stopGraceSeconds + 10) * 1000;
        },
      }, templates),
      // The web dashboard at `/`, behind the same host and identity checks as the API.
      dashboardRouter(),
    ],
    log,
  });

  // Requests wait until the controller has started: none sees it half-started.
  let ready = false;
  let markReady!: () => void;
  let markFailed!: (error: unknown) => void;
  const started = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    markFailed = reject;
  });
  started.catch(() => undefined);

  // Locally, only names of this service (DNS rebinding), and editors only for pages of those names;
  // deployed, the platform's sign-in decides. The API's Origin rule is its CORS policy.
  const hosts = settings.requireIdentity ? undefined : new AllowedHosts({ boundHost: settings.host, extra: settings.allowedHosts });
  const refusal = (req: IncomingMessage, isUpgrade: boolean) => missingHost(req) ?? hosts?.hostRefusal(req)
    ?? (isEditorPath(req.url) ? hosts?.originRefusal(req, isUpgrade) : cors.refusal(req, isUpgrade));
  // Proxy paths are handled before express: its per-request set-up costs more than proxying.
  // A request without the identity the deployment requires goes to express, which refuses it.
  // Only express adds CORS headers: the API's, never an editor's.
  const toProxy = proxy.middleware();
  // GET /servers and GET /servers/{id} in their plain form, from the feed's cached JSON (anything
  // else about them, errors included, is express's).
  const reads = fastReads({
    feed, reconciler, access, watch, cors,
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
    else writeError(res, 400, 'BAD_REQUEST', 'the request target is not a path this service can read: send one such as /servers', cors.headersFor(req));
  });
  const handle = guardRequests(log, (req: IncomingMessage, res: ServerResponse) => {
    const refused = refusal(req, false);
    if (refused) return writeError(res, refused.status, refused.code, refused.message, apiHeaders(req));
    if (settings.requireIdentity && !hasForwardedIdentity(req)) return toApp(req, res);
    toProxy(req, res, () => reads(req, res) || toApp(req, res));
  }, apiHeaders);
  const server = createServer({ requireHostHeader: false }, (req, res) => {
    if (ready) handle(req, res);
    else started.then(() => handle(req, res), () => res.destroy());
  });
  server.keepAliveTimeout = 65_000;
  // What Node answers by itself otherwise, in a bare 400 or 417: here in the error envelope.
  server.on('clientError', answerClientError);
  server.on('checkExpectation', (_req: IncomingMessage, res: ServerResponse) => {
    writeError(res, 417, 'EXPECTATION_FAILED', 'the only expectation this service meets is "Expect: 100-continue": leave the Expect header out');
  });
  // Node closes a CONNECT without a word when nobody listens: say why, in the envelope.
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    writeRawError(socket, 405, 'METHOD_NOT_ALLOWED', 'this service is not a forward proxy, so CONNECT is refused: open editors at /vscode/{port}/ instead');
  });
  // Upgraded sockets leave the server's connection tracking: keep them, to close them on exit.
  const upgraded = new Set<Duplex>();
  // WebSocket upgrades pass the same checks as ordinary requests.
  const upgrade = guardUpgrades(log, (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const refused = refusal(req, true) ?? (settings.requireIdentity && !hasForwardedIdentity(req) ? unauthenticated() : undefined);
    if (refused) return writeRawError(socket, refused.status, refused.code, refused.message, apiHeaders(req));
    if (logStreams.handleUpgrade(req, socket, head) || proxy.handleUpgrade(req, socket, head)) return;
    writeRawError(socket, 404, 'NOT_FOUND', 'there is no WebSocket at this path: use /ws/logs, /ws/logs/{id} or /vscode/{port}/', apiHeaders(req));
  }, apiHeaders);
  server.on('upgrade', (req, socket, head) => {
    // Node leaves an upgraded socket without an error listener: a client gone meanwhile must not end the process.
    socket.on('error', () => socket.destroy());
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    if (ready) upgrade(req, socket, head);
    else started.then(() => upgrade(req, socket, head), () => socket.destroy());
  });

  const shutDown = async (stopEditors: boolean) => {
    // Background snapshots and restores end first (the final snapshots are the caller's, before close).
    await persistence?.dispose();
    await router?.dispose();
    // Revokes the token it created (bounded): a clean shutdown leaves no live token behind.
    await assistant?.dispose();
    await gitops.dispose();
    await live.dispose();
    await logStreams.close();
    watch.close();
    feed.dispose();
    metrics?.dispose();
    proxy.close();
    for (const socket of upgraded) socket.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
    await heartbeats.dispose();
    await controller.stop({ stopEditors });
    stats.dispose();
    await templates.dispose();
    // Also any editor of this data folder the controller does not track (an invalid manifest's).
    if (stopEditors) await stopAllEditors(layout.editorsDir, live.current.editor.stopGraceSeconds * 1000);
    await logs.close();
    await releaseLocks();
  };

  let port: number;
  try {
    await listen(server, settings);
    port = (server.address() as AddressInfo).port;
    servicePort = port;
    // Before the controller hands out any port.
    ports.exclude(port, 'the port of this service itself (devbox-controller listens on it)');
    // Servers the target holds and this data folder lacks come back: manifests before the controller lists them.
    await persistence?.start();
    await controller.start();
    controllerStarted = true;
    stats.start();
    heartbeats.start();
    await gitops.start();
    await templates.start();
    // `access: owner` where no one signs in protects nothing: said at start and after an edit that sets it.
    const warnAccess = () => {
      const warning = access.localWarning();
      if (warning) log(warning);
    };
    warnAccess();
    // A valid edit of the config file: new servers get the new port range; servers follow their groups' new extensions and settings.
    live.onChange((before, after) => {
      if (before.access !== after.access) warnAccess();
      if (before.ports.min !== after.ports.min || before.ports.max !== after.ports.max) ports.setRange(after.ports);
      // New limits may make room for the servers waiting for it.
      if (!sameData(before.capacity, after.capacity)) capacity.wake();
      if (!sameData(before.extensionGroups, after.extensionGroups)) {
        controller.resync().catch((error) => log(`looking at every server after a config edit failed: ${(error as Error).message}`));
      }
    });
    await live.watch();
  } catch (error) {
    markFailed(error);
    await shutDown(false);
    throw error;
  }
  ready = true;
  markReady();
  // In the background: it waits for its config file, and the service serves meanwhile.
  router?.start().catch((error) => log(`assistant router: could not be started: ${(error as Error).message}`));
  assistant?.start();
  const url = `http://${settings.host.includes(':') ? `[${settings.host}]` : settings.host}:${port}`;

  return {
    url, port, server, controller, logs, proxy, activity, assistant, stats, persistence,
    close: (options = {}) => shutDown(options.stopEditors === true),
  };
}

/** Binds the service's address; a port or host that cannot be had is a StartupError saying which variable to change. */
async function listen(server: Server, settings: Settings): Promise<void> {
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(settings.port, settings.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const variable = settings.portVariable ?? 'DEVBOX_PORT';
    const port = `port ${settings.port} on ${settings.host} (${settings.portVariable ? `from ${settings.portVariable}` : 'the default'})`;
    if (code === 'EADDRINUSE') {
      throw new StartupError(`${port} is already in use by another process: stop that process, or set ${variable} to a free port (0 picks one)`);
    }
    if (code === 'EACCES') {
      throw new StartupError(`${port} may not be bound by this user: set ${variable} to a port from 1024 up (0 picks one)`);
    }
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
      throw new StartupError(`DEVBOX_HOST=${settings.host} is not an address of this machine: set DEVBOX_HOST to one (127.0.0.1, or 0.0.0.0 for all)`);
    }
    throw error;
  }
}
