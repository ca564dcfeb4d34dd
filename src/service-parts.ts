// The service's parts, built in dependency order, each from parts already built: folders and files
// first, then the runtime; the index and the work queue (which every part below reads, or puts
// names into, so none of them needs the controller); what the controller consults (capacity,
// metrics, persistence); the controller; then what serves people (access, proxy, streams,
// templates, API). Nothing here starts anything: service-components.ts says in which order the
// parts start and stop.
import { homedir } from 'node:os';
import type { Application } from 'express';
import { ownerOf, ServerAccess } from './api/access.ts';
import { EditorSessions } from './api/editor-sessions.ts';
import { createApp } from './api/app.ts';
import { ApiCors } from './api/cors.ts';
import { dashboardRouter } from './api/dashboard.ts';
import { requireForwardedIdentity } from './api/identity.ts';
import { distinctLabel } from './api/naming.ts';
import { openApiRouter } from './api/openapi/index.ts';
import { configHealthSection, configRouter } from './api/routes/config.ts';
import { serviceHealthRouter } from './api/routes/service-health.ts';
import { syncRouter } from './api/routes/sync.ts';
import { templatesHealth } from './api/routes/templates.ts';
import { portsRouter } from './api/routes/ports.ts';
import { usageRouter } from './api/routes/usage.ts';
import { WatchStreams } from './api/routes/watch.ts';
import { ServerFeed } from './api/server-feed.ts';
import { serversRouter } from './api/servers.ts';
import { buildAudit } from './audit/service-audit.ts';
import { LiveConfig } from './config/live-config.ts';
import type { Settings } from './config/settings.ts';
import { ActivityTracker } from './controller/activity.ts';
import { Capacity } from './controller/capacity.ts';
import { controllerCommands } from './controller/commands.ts';
import { Controller, reconcileQueue } from './controller/controller.ts';
import { idleTimeoutSeconds } from './controller/ensure-idle.ts';
import { HeartbeatReader, heartbeatIntervalMs } from './controller/heartbeats.ts';
import { ServerIdentities } from './controller/identity.ts';
import { PersonQuotas } from './controller/person-quotas.ts';
import { PortAllocator } from './controller/ports.ts';
import type { HealthSection } from './core/health-section.ts';
import { CodeServerExtensionInstaller } from './extensions/installer.ts';
import { GitOps } from './gitops/gitops.ts';
import type { ServerIndex } from './index/server-index.ts';
import { ServerTable } from './index/server-table.ts';
import { LogHub, LogStreamServer } from './logs/index.ts';
import { ServiceMetrics } from './metrics/service-metrics.ts';
import { UsageHistory } from './metrics/usage-history.ts';
import type { PersistenceService } from './persistence/service-persistence.ts';
import { RouterProcess } from './platform/router-process.ts';
import { TokenKeeper } from './platform/token-keeper.ts';
import { EditorProxy, ForwardedPorts, routableEndpoint } from './proxy/index.ts';
import { activityObserver, fanOut } from './proxy/observers.ts';
import { wakeOnOpen } from './proxy/wake-page.ts';
import type { EditorBinary } from './runtime/editor-binary.ts';
import { httpHealth } from './runtime/health.ts';
import { listeningPorts } from './runtime/listeners.ts';
import { isRunning, type EditorEndpoint } from './runtime/interface.ts';
import { StatsSampler } from './runtime/stats.ts';
import { TemplateCatalog } from './templates/catalog.ts';
import { allowedGitSchemes } from './workspace/git-source.ts';
import { DataLayout } from './workspace/layout.ts';
import { buildRuntime, editorDescription, followEditorOutput, manifestStoreFor } from './service-runtime.ts';

/** What the health page says without a persistence target. */
const NOT_PERSISTED = 'not persisted: set DEVBOX_PERSIST_TO to a folder or dbfs:/Volumes/… to keep work across restarts';

/** Where the service listens: the configured port until the socket is bound, then the bound one. */
export interface ServiceAddress {
  port: number;
}

export type Parts = Awaited<ReturnType<typeof buildParts>>;

/**
 * Builds every part. `editor` is the local code-server, for the process runtime (undefined with
 * the Kubernetes runtime). `openPersistence` is given only with a persistence target (its code is
 * loaded only then); a target that cannot be used throws before anything is written.
 */
export async function buildParts(
  settings: Settings, editor: EditorBinary | undefined, log: (message: string) => void,
  openPersistence?: (deps: PersistenceParts) => Promise<PersistenceService>,
) {
  // `config` is what the service started with (for what only a restart changes); `live` follows the file.
  const { config } = settings;
  const localMode = !settings.requireIdentity;
  const address: ServiceAddress = { port: settings.port };

  // --- Files and folders, the editors' runtime ---
  const live = new LiveConfig({ file: settings.configFile, initial: config, log });
  const layout = new DataLayout(settings.dataDir);
  // claude-code-router for the editors' assistants (deployed, or DEVBOX_ROUTER=1); editors find its `ccr` first on their PATH.
  const router = settings.runRouter ? new RouterProcess({ homeDir: settings.platform?.homeDir ?? homedir(), port: settings.platform?.routerPort, dataDir: settings.dataDir, log }) : undefined;
  // The editors' runtime, by the settings: local processes (the default), or Pods in a cluster.
  const installer = editor && new CodeServerExtensionInstaller(editor.path);
  // Editors find the router's `ccr` first on their PATH.
  const env = router ? { ...process.env, PATH: [router.binDir, process.env.PATH].filter(Boolean).join(':') } : undefined;
  const runtime = await buildRuntime(settings, { editor, installer, layout, ...(env ? { env } : {}) }, log);
  const { storage, workload } = runtime;
  // The manifests folder, or the cluster's EditorServer objects (runtime.kubernetes.source: crd).
  const store = await manifestStoreFor(settings, layout, runtime.cluster, log);
  // 256 KiB of recent lines per server in memory (about 2,000); the rest is in the log files. The
  // editors' output is files the hub follows in each server's log folder, or the workload's stream.
  const logs = new LogHub({
    logsDir: layout.logsDir, maxBufferBytes: 256 * 1024,
    ...(runtime.output === 'stream' ? { output: (name: string, options: { signal: AbortSignal; since: 'now' | 'start' }) => workload.logs(name, options) } : {}),
  });
  const ports = new PortAllocator(config.ports, (port) => workload.portIsFree?.(port) ?? Promise.resolve(true));
  // When each server was last used: what a person does through the proxy (docs/idle.md).
  const activity = new ActivityTracker();

  // --- The index and the queue: what every part below reads, and where it puts names to reconcile ---
  // Each server's uid, kept across restarts; the index answers nameOfUid from it.
  const identities = new ServerIdentities(layout);
  // Records, running editors, wake marks and events: the controller writes them, everyone else reads.
  const table = new ServerTable({ nameOfUid: (uid) => identities.nameOf(uid), alive: (name, ref) => isRunning(workload.state(name, ref).state) });
  const index: ServerIndex = table;
  // Names wait here until the controller has loaded every uid and adopted the running editors.
  const queue = reconcileQueue(config.controller.workers, log);
  const enqueue = (name: string) => queue.add(name);
  const stats = new StatsSampler(() => index.editorsToSample(), (refs) => workload.usage(refs), config.controller.statsIntervalSeconds * 1000);

  // --- What the controller consults ---
  // Who may see and drive which server: the config's `access` policy, read at every check.
  const access = new ServerAccess({ config: () => live.current, deployed: settings.requireIdentity });
  // Limits per person (capacity.perPerson): the owner of each server, kept from the index's events.
  const quotas = new PersonQuotas({ limits: () => live.current.capacity.perPerson, isAdmin: (person) => access.isAdminUser(person), ownerOf, index });
  // The capacity limits every start passes, the API's and the controller's alike (read from the live config).
  const capacity = new Capacity({
    quotas,
    config: () => live.current.capacity,
    running: () => index.running(),
    memoryOf: (name) => stats.get(name)?.memoryMb,
    lastUsed: (name) => activity.lastActivity(name) ?? (Date.parse(index.serverNamed(name)?.status?.startTime ?? '') || undefined),
    enqueue,
    machine: () => workload.memory(),
  });
  // Git URL schemes a workspace source may use now: the controller's and the API's rule alike.
  const gitSchemes = () => allowedGitSchemes(live.current.workspace, localMode);
  // GET /metrics (DEVBOX_METRICS=0: none, and nothing counted): plain numbers on the request path, read when scraped.
  const metrics = settings.metrics === false ? undefined : new ServiceMetrics({
    index, stats, activity, logs,
    queueDepth: () => queue.length,
    portOwner: (port) => ports.owner(port),
    people: () => capacity.people().people,
  });
  // Usage over time for the dashboard's charts, in bounded rings fed by the sampler and the index.
  const usage = new UsageHistory({ historyMinutes: config.controller.usageHistoryMinutes, bucketSeconds: config.controller.usageBucketSeconds }, { index, stats });
  // Work kept across restarts: opened only when a target is set.
  const persistence = await openPersistence?.({
    persist: settings.persist!, platform: settings.platform, dataDir: settings.dataDir,
    store, layout, storage, records: index.records, logs, log,
    running: () => index.running(),
    onChanged: (listener) => index.on('changed', listener),
    // Names queued before the controller starts wait for it: it gives them their uids first.
    enqueue,
    config: () => live.current,
    metrics: metrics?.persistence,
  });

  // --- The controller ---
  const controller = new Controller({
    deps: {
      store, storage, workload, health: runtime.health ?? httpHealth, ports, layout, logs, capacity, activity, persistence, gitSchemes, enqueue, log,
      get config() {
        return live.current;
      },
      // The config's resources for every editor, read at each start (an edit applies at the next one).
      defaultResources: () => live.current.runtime.kubernetes.resources,
    },
    table, identities, queue,
    resyncMs: config.controller.resyncSeconds * 1000,
    get stopGraceMs() {
      return live.current.editor.stopGraceSeconds * 1000;
    },
    log,
  });
  // Everything past this point reads the servers through the index and acts through the commands.
  const commands = controllerCommands(controller);
  // Room frees when an editor stops or gives memory back: the servers waiting for it are queued again.
  stats.onSample(() => capacity.noticeSample());
  index.on('changed', () => capacity.noticeChange());
  followEditorOutput(index, logs, Date.now());
  index.on('deleted', (name) => {
    capacity.forget(name);
    capacity.noticeChange();
    activity.forget(name);
  });
  // The shortest idle timeout in force changes only with a server (its spec, or whether it runs)
  // or the config: worked out again then, not at each of the reader's one-second ticks (reading
  // every running editor's record each second was a large part of the service's CPU at rest).
  let heartbeatMs: number | undefined;
  // Each running editor's /healthz, read in the background: the running editor's health probe
  // (one that stops answering, or answers again, is reconciled then, with no periodic look at
  // every server). Its heartbeat is not activity (docs/idle.md). Only running editors are
  // walked: thousands of stopped servers cost these rounds nothing.
  const heartbeats = new HeartbeatReader({
    running: () => index.running().flatMap((name) => {
      const endpoint = index.serverNamed(name)?.status?.phase === 'Running' ? index.endpointOf(name) : undefined;
      return endpoint ? [[name, endpoint] as [string, EditorEndpoint]] : [];
    }),
    stillRunning: (name) => index.endpointOf(name) !== undefined,
    onHealth: (name, answered) => {
      if (commands.recordHealth(name, answered)) controller.enqueue(name);
    },
    intervalMs: () => heartbeatMs ??= heartbeatIntervalMs(index.running().flatMap((name) => {
      const server = index.serverNamed(name);
      return server ? [idleTimeoutSeconds(server.spec, live.current)] : [];
    })),
  });
  const heartbeatsChanged = () => void (heartbeatMs = undefined);
  index.on('changed', heartbeatsChanged);
  index.on('deleted', heartbeatsChanged);
  live.onChange(heartbeatsChanged);
  // A running editor's next idle check was set by the timeout in force then: a new one is looked at now.
  live.onChange((before, after) => {
    if (before.editor.idleTimeoutSeconds !== after.editor.idleTimeoutSeconds) for (const name of index.running()) controller.enqueue(name);
  });

  // --- What serves people: access (built above, for the quotas), the proxy, the streams ---
  const serverNamed = (name: string | undefined) => (name === undefined ? undefined : index.serverNamed(name));
  const sessions = new EditorSessions(access, (name) => index.serverNamed(name), (name) => commands.attached(name));
  index.on('changed', (name) => sessions.recheck(name));
  index.on('deleted', (name) => sessions.recheck(name));
  live.onChange(() => sessions.recheckAll());
  const touchPort = (port: number) => {
    const name = ports.owner(port);
    if (name !== undefined) activity.touch(name);
  };
  // The audit trail: every change by a person or by the controller, through every door, chained by hash.
  const audit = await buildAudit({
    // A cluster's manifests are its EditorServer objects (their store has an API client); else the folder.
    dataDir: settings.dataDir, index, access, source: store, door: 'api' in store ? 'cluster' : 'manifest',
    ...(persistence?.targetStore ? { target: persistence.targetStore } : {}), copyEveryMs: () => live.current.persistence.intervalSeconds * 1000, log,
  });

  const proxy = new EditorProxy({
    // DEVBOX_ACTIVITY_TRACKING=0 with DEVBOX_METRICS=0 leaves the proxy without an observer (the benchmark's baseline).
    observer: fanOut([settings.activityTracking === false ? undefined : activityObserver(touchPort), metrics?.observer]),
    // Only a running editor this service manages, and the requester may reach; never the service itself.
    route: (port, req) => {
      const endpoint = port === address.port ? undefined : routableEndpoint(index, ports, port);
      const name = ports.owner(port);
      if (!endpoint || !access.sees(req, serverNamed(name))) return undefined;
      // An editor WebSocket is closed again when its person loses access (src/api/editor-sessions.ts).
      if (name !== undefined && req.headers.upgrade !== undefined) sessions.opened(name, req);
      return endpoint;
    },
    // A server stopped for idleness starts when its editor is opened, by whoever may reach it.
    unroutable: wakeOnOpen({
      serverOn: (port, req) => {
        const name = port === address.port ? undefined : ports.owner(port);
        const server = serverNamed(name);
        if (name === undefined || !server || !access.sees(req, server)) return undefined;
        return { name, displayName: distinctLabel(server, index.records.values()) };
      },
      wakeState: (name) => index.wakeState(name),
      wake: (name, why, req) => {
        const first = !index.waking(name);
        const woke = commands.wake(name, why);
        // A person opening the editor starts it: the trail says who (once: the starting page's polls wake it again).
        if (woke && first) audit.recordFor(req, { door: 'proxy', action: 'start', server_id: index.serverNamed(name)?.metadata.uid ?? null, server_name: name, outcome: 'ok', detail: why });
        return woke;
      },
    }),
    // /vscode/{port}/proxy/{p}/: a port the server's own programs listen on (on one machine the editors share the loopback; a Pod's ports are all its own).
    forwardedPorts: new ForwardedPorts({
      listenerOf: async (editorPort, port) => workload.listenerOf?.(ports.owner(editorPort) ?? '', port) ?? 'this',
      ...(workload.listenerOf ? { servicePort: () => address.port } : {}),
    }),
    log,
  });
  // The API's cross-origin policy, from the config in use (api.allowedOrigins), for every answer the API makes.
  const cors = new ApiCors({ allowedOrigins: () => live.current.api.allowedOrigins });
  const logStreams = new LogStreamServer(logs, (id, req) => {
    const name = index.nameOfUid(id);
    return name !== undefined && access.sees(req, serverNamed(name)) ? { name } : undefined;
  }, {
    visibleTo: (req) => {
      const who = access.requester(req.headers);
      return (name) => access.allows(who, serverNamed(name));
    },
    responseHeaders: (req) => cors.headersFor(req),
  });
  // GET /servers?watch=1: records serialised once per change, shared by every stream.
  const feed = new ServerFeed(index, stats, persistence);
  const watch = new WatchStreams({ feed, access, log });
  // Built after the metrics (the feed needs persistence, which counts into them): counted from now.
  metrics?.countStreams(() => ({
    logs: { open: logStreams.state.clients, dropped: logStreams.state.dropped },
    watch: { open: watch.state.watchers, dropped: watch.state.dropped_slow },
  }));

  // --- Templates, git sync, the assistant, health ---
  // Sections of GET /health, added by the parts that have something to report.
  const healthSections = new Map<string, HealthSection>();
  healthSections.set('watch', { read: () => watch.state });
  healthSections.set('logs', { read: () => logs.state });
  // A full fleet is not a problem: the section has figures only.
  healthSections.set('capacity', { read: () => capacity.read() });
  healthSections.set('audit', audit.health);
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
  healthSections.set('persistence', persistence
    ? { read: () => persistence.health(), problems: () => persistence.problems() }
    : { read: () => ({ target: null, state: 'disabled', message: NOT_PERSISTED }) });
  // GitOps takes the schemes of the start-up config (its checkout's git is set up once).
  const gitops = new GitOps({
    settings, store, schemes: allowedGitSchemes(config.workspace, localMode), timeoutMs: config.workspace.cloneTimeoutSeconds * 1000,
    enqueue: audit.gitEnqueue(enqueue), requestDeletion: (name) => commands.requestDeletion(name), log,
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

  // --- The API ---
  const apiTimer = metrics?.apiTimer();
  const app: Application = createApp({
    first: apiTimer ? [apiTimer] : [],
    cors: cors.middleware(),
    before: [...(settings.requireIdentity ? [requireForwardedIdentity()] : []), audit.middleware],
    routers: [
      serviceHealthRouter({ startedAt: Date.now(), editor: editorDescription(settings, editor), servers: () => index.records.size, sections: healthSections }),
      // GET /openapi.json: this API described for machines.
      openApiRouter(),
      ...(metrics ? [metrics.router()] : []),
      usageRouter({ index, access, usage }),
      portsRouter({ index, access, servicePort: () => address.port, listeningPorts: listeningPorts(workload) }),
      configRouter(live, localMode),
      audit.router,
      syncRouter(gitops),
      serversRouter({
        store, index, commands, ports, stats, logs, layout, gitSchemes,
        get workspace() {
          return live.current.workspace;
        },
        get extensionGroups() {
          return live.current.extensionGroups;
        },
        excludedPort: (port) => ports.excluded(port),
        ownerOf: (name) => gitops.ownerOf(name),
        access,
        capacity,
        quotas,
        watch,
        feed,
        persistence,
        get startTimeoutMs() {
          return live.current.editor.startTimeoutSeconds * 1000;
        },
        get stopTimeoutMs() {
          return (live.current.editor.stopGraceSeconds + 10) * 1000;
        },
        get retainDeletedDays() {
          return live.current.persistence.retainDeletedDays;
        },
      }, templates),
      // The web dashboard at `/`, behind the same host and identity checks as the API.
      dashboardRouter(),
    ],
    log,
  });

  return {
    settings, address, live, layout, store, router, runtime, logs, ports, activity, capacity, quotas, controller, index, commands, stats, heartbeats,
    metrics, usage, persistence, access, proxy, cors, logStreams, feed, watch, templates, gitops, assistant, apiTimer, app, audit,
  };
}

/** What the persistence service is opened with. */
export type PersistenceParts = Parameters<typeof import('./persistence/service-open.ts').openPersistence>[0];
