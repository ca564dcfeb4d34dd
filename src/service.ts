// The composition root. startService takes the folders' locks; serve then builds the parts
// (service-parts.ts: every object, in dependency order), the HTTP server and the path of a
// request through it (service-http.ts), and starts the components in their order
// (service-components.ts), stopping them in reverse on close or on a failed start.
import type { Server } from 'node:http';
import type { Settings } from './config/settings.ts';
import type { Controller } from './controller/controller.ts';
import type { ActivityTracker } from './controller/activity.ts';
import { gitOpsProblem } from './gitops/gitops.ts';
import type { ServerIndex } from './index/server-index.ts';
import type { LogHub } from './logs/index.ts';
import { FolderLock, FolderLockedError } from './manifests/lock.ts';
import type { PersistenceService } from './persistence/service-persistence.ts';
import type { TokenKeeper } from './platform/token-keeper.ts';
import type { EditorProxy } from './proxy/index.ts';
import { resolveEditorBinary, type EditorBinary } from './runtime/editor-binary.ts';
import type { StatsSampler } from './runtime/stats.ts';
import { Lifecycle, serviceComponents } from './service-components.ts';
import { serviceHttp } from './service-http.ts';
import { StartupError } from './service-errors.ts';
import { buildParts, type PersistenceParts } from './service-parts.ts';
import { runsLocalEditors } from './service-runtime.ts';
import { allowedGitSchemes } from './workspace/git-source.ts';

export interface Service {
  url: string;
  port: number;
  server: Server;
  controller: Controller;
  /** What the controller knows of every server, read-only (what the API, the proxy and metrics read). */
  index: ServerIndex;
  logs: LogHub;
  proxy: EditorProxy;
  /** When each server was last used (what a person does through the proxy: docs/idle.md). */
  activity: ActivityTracker;
  /** The editors' CPU and memory, sampled in the background. */
  stats: StatsSampler;
  /** The router's access token (deployed, or given Databricks credentials); else undefined. */
  assistant?: TokenKeeper;
  /** Snapshots of every server to the persistence target (DEVBOX_PERSIST_TO); undefined without one. */
  persistence?: PersistenceService;
  close(options?: { stopEditors?: boolean }): Promise<void>;
}

export { StartupError } from './service-errors.ts';

/**
 * Takes the manifests and data folders' locks, binds the port, and only then starts the controller: a
 * start that is refused adopts, starts and writes nothing. Requests that arrive in between wait
 * until the controller has started.
 */
export async function startService(settings: Settings, log: (message: string) => void = console.log): Promise<Service> {
  // Pods run the editor's image: code-server is needed on this machine only for local processes.
  const editor = !runsLocalEditors(settings) ? undefined : resolveEditorBinary({ ...process.env, DEVBOX_EDITOR_BIN: settings.editorBin ?? '' });
  if (editor) log(`editor: ${editor.path} (from ${editor.source})`);
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

async function serve(settings: Settings, editor: EditorBinary | undefined, releaseLocks: () => Promise<void>, log: (message: string) => void): Promise<Service> {
  // Git sync settings (a URL, a ref, a person's templates folder) that cannot work refuse the start.
  const gitopsRefusal = await gitOpsProblem(settings, allowedGitSchemes(settings.config.workspace, !settings.requireIdentity));
  if (gitopsRefusal) throw new StartupError(gitopsRefusal);
  const parts = await buildParts(settings, editor, log, settings.persist ? openPersistenceOrRefuse : undefined);
  const http = serviceHttp(parts, log);
  const lifecycle = new Lifecycle(serviceComponents(parts, http, releaseLocks, listen, log), log);
  try {
    await lifecycle.start();
  } catch (error) {
    http.fail(error);
    throw error;
  }
  const { controller, index, logs, proxy, activity, assistant, stats, persistence, address } = parts;
  const url = `http://${settings.host.includes(':') ? `[${settings.host}]` : settings.host}:${address.port}`;
  return {
    url, port: address.port, server: http.server, controller, index, logs, proxy, activity, assistant, stats, persistence,
    close: (options = {}) => lifecycle.stop({ stopEditors: options.stopEditors === true }),
  };
}

/** Opens the persistence target (its code loaded only then); one that cannot be used refuses the start. */
async function openPersistenceOrRefuse(deps: PersistenceParts): Promise<PersistenceService> {
  const { openPersistence, PersistTargetError } = await import('./persistence/service-open.ts');
  try {
    return await openPersistence(deps);
  } catch (error) {
    if (error instanceof PersistTargetError) throw new StartupError(error.message);
    throw error;
  }
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
