// The order in which the service's parts start, and (the reverse) stop. Each component has a
// name, an optional start and an optional stop; a component counts as started once its start
// has returned. Why this order:
// - the folder locks are held before anything touches the folders, and released last;
// - the socket is bound before the controller hands out any port (its own is excluded), but the
//   service answers requests only once everything behind them runs ("http serving"), and stops
//   answering before the controller stops;
// - servers the persistence target holds and this data folder lacks come back before the
//   controller lists the manifests; background snapshots end before anything else stops (the
//   final snapshots at SIGTERM are the caller's, before close);
// - the router and the assistant's token are started last, in the background: a slow or
//   refusing workspace never holds up the editors.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { Settings } from './config/settings.ts';
import { sameData } from './core/equal.ts';
import type { ServiceHttp } from './service-http.ts';
import type { Parts } from './service-parts.ts';
import { manifestsSynced, runtimeSynced } from './service-runtime.ts';

export interface StopOptions {
  /** Stop the editors too (by default they keep running, and the next start adopts them). */
  stopEditors: boolean;
}

export interface Component {
  name: string;
  start?: () => Promise<void> | void;
  stop?: (options: StopOptions) => Promise<unknown> | unknown;
}

/** Starts components in order and stops the started ones in reverse; a stop that fails is logged, and the rest still stop. */
export class Lifecycle {
  private readonly components: readonly Component[];
  private readonly log: (message: string) => void;
  private readonly started: Component[] = [];

  constructor(components: readonly Component[], log: (message: string) => void) {
    this.components = components;
    this.log = log;
  }

  /** Starts each in turn; when one fails, those started are stopped (in reverse) and the error thrown. */
  async start(): Promise<void> {
    for (const component of this.components) {
      try {
        await component.start?.();
      } catch (error) {
        await this.stop({ stopEditors: false });
        throw error;
      }
      this.started.push(component);
    }
  }

  async stop(options: StopOptions): Promise<void> {
    for (const component of this.started.splice(0).reverse()) {
      try {
        await component.stop?.(options);
      } catch (error) {
        this.log(`stopping ${component.name} failed: ${(error as Error).message}`);
      }
    }
  }
}

/** The service's components, in start order. */
export function serviceComponents(
  parts: Parts, http: ServiceHttp, releaseLocks: () => Promise<void>, listen: (server: Server, settings: Settings) => Promise<void>, log: (message: string) => void,
): Component[] {
  const { settings, address, live, logs, runtime, ports, controller, stats, heartbeats, gitops, templates, persistence, router, assistant, feed, metrics, access, capacity } = parts;
  return [
    { name: 'folder locks', stop: releaseLocks },
    { name: 'logs', stop: () => logs.close() },
    // Closed after the controller and the API have stopped: their last acts are in it.
    { name: 'audit trail', stop: () => parts.audit.close() },
    {
      // Also any editor of this data folder the controller does not track (an invalid manifest's).
      name: 'editors of this data folder',
      stop: ({ stopEditors }) => stopEditors && runtime.workload.stopStrays?.(live.current.editor.stopGraceSeconds * 1000),
    },
    {
      name: 'server feed and metrics',
      stop: () => {
        feed.dispose();
        metrics?.dispose();
      },
    },
    {
      name: 'listening socket',
      start: async () => {
        await listen(http.server, settings);
        address.port = (http.server.address() as AddressInfo).port;
        // Before the controller hands out any port.
        ports.exclude(address.port, 'the port of this service itself (devbox-controller listens on it)');
      },
      stop: () => http.close(),
    },
    {
      // A cluster's EditorServer objects are listed before the controller lists them.
      name: 'cluster manifests',
      start: () => manifestsSynced(parts.store, log),
      stop: () => (parts.store as { close?: () => Promise<void> }).close?.(),
    },
    // Servers the target holds and this data folder lacks come back: manifests before the controller lists them.
    { name: 'restore from the persistence target', start: () => persistence?.start() },
    {
      name: 'controller',
      start: async () => {
        // The runtime's view is current first (a cluster runtime's first list): adoption reads it.
        await runtimeSynced(runtime, log);
        await controller.start();
      },
      stop: ({ stopEditors }) => controller.stop({ stopEditors }),
    },
    { name: 'stats sampler', start: () => stats.start(), stop: () => stats.dispose() },
    { name: 'usage history', stop: () => parts.usage.dispose() },
    { name: 'heartbeats', start: () => heartbeats.start(), stop: () => heartbeats.dispose() },
    { name: 'git sync', start: () => gitops.start(), stop: () => gitops.dispose() },
    { name: 'templates', start: () => templates.start(), stop: () => templates.dispose() },
    {
      name: 'config file',
      start: async () => {
        // `access: owner` where no one signs in protects nothing: said at start and after an edit that sets it.
        const warnAccess = () => {
          const warning = access.localWarning();
          if (warning) log(warning);
        };
        warnAccess();
        // A valid edit: new servers get the new port range; servers follow their groups' new extensions and settings.
        live.onChange((before, after) => {
          if (before.access !== after.access) warnAccess();
          if (before.ports.min !== after.ports.min || before.ports.max !== after.ports.max) ports.setRange(after.ports);
          // New limits may make room for the servers waiting for it.
          if (!sameData(before.capacity, after.capacity) || !sameData(before.admins, after.admins)) capacity.wake();
          if (!sameData(before.extensionGroups, after.extensionGroups)) {
            controller.resync().catch((error) => log(`looking at every server after a config edit failed: ${(error as Error).message}`));
          }
        });
        await live.watch();
      },
      stop: () => live.dispose(),
    },
    { name: 'http serving', start: () => http.open(), stop: () => http.close() },
    // Revokes the token it created (bounded): a clean shutdown leaves no live token behind.
    { name: 'assistant token', start: () => assistant?.start(), stop: () => assistant?.dispose() },
    {
      // In the background: it waits for its config file, and the service serves meanwhile.
      name: 'assistant router',
      start: () => void router?.start().catch((error) => log(`assistant router: could not be started: ${(error as Error).message}`)),
      stop: () => router?.dispose(),
    },
    { name: 'background snapshots', stop: () => persistence?.dispose() },
  ];
}
