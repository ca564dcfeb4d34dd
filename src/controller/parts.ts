// The controller's parts, built once: the context every step of a reconcile is given (its side
// effects, the index it writes, and each step's own memory), with the few acts all steps share
// (write status, warn, log). The Reconciler, the start-up adoption and the commands are built on it.
import type { ServerTable } from '../index/server-table.ts';
import { Presence } from './absence.ts';
import type { ReconcileContext, ReconcilerDeps } from './context.ts';
import { ExtensionsSeen } from './ensure-extensions.ts';
import { HealthProbes } from './ensure-health.ts';
import { IdleStops } from './ensure-idle.ts';
import { SettingsApplied } from './ensure-settings.ts';
import { DevcontainerPlans } from './ensure-devcontainer.ts';
import { Sources } from './ensure-workspace.ts';
import type { ServerIdentities } from './identity.ts';
import { Operations } from './operations.ts';
import { commitStatus } from './status-commit.ts';
import { CrashHistory, Placement } from './supervision.ts';

/** Warnings kept per record for GET /manifests. */
const MAX_WARNINGS = 5;

export function reconcileContext(deps: ReconcilerDeps, table: ServerTable, identities: ServerIdentities): ReconcileContext {
  const log = (message: string) => (deps.log ?? console.log)(message);
  const ctx: ReconcileContext = {
    deps,
    table,
    identities,
    operations: new Operations((name) => deps.enqueue(name), log),
    unannounced: new Set(),
    presence: new Presence(),
    health: new HealthProbes(),
    crashes: new CrashHistory(),
    placement: new Placement(),
    sources: new Sources(),
    devcontainer: new DevcontainerPlans(),
    settings: new SettingsApplied(),
    extensions: new ExtensionsSeen(),
    idle: new IdleStops(),
    commit: (record, uid, status) => commitStatus(ctx, record, uid, status),
    warn: (name, message) => {
      const record = table.records.get(name);
      if (!record || record.warnings?.includes(message)) return;
      record.warnings = [...(record.warnings ?? []), message].slice(-MAX_WARNINGS);
      table.changed(name);
      log(`manifest ${deps.store.fileOf(name)}: ${message}`);
      deps.logs.event(name, 'WARN', message);
    },
    log,
  };
  return ctx;
}

/**
 * Follows the runtime's news: an editor that exited, became ready or has a problem queues its
 * server (its state says what happened), and what the platform says about it (Kubernetes events)
 * becomes the server's event too.
 */
export function followRuntime(ctx: Pick<ReconcileContext, 'deps' | 'table'>): void {
  const { deps, table } = ctx;
  deps.workload.onChange((name) => deps.enqueue(name));
  deps.workload.onEvent((name, event) => {
    if (!table.records.has(name)) return;
    deps.logs.event(name, event.level, `${event.reason}: ${event.message}`);
    table.events.add(name, { time: new Date().toISOString(), type: event.level === 'WARN' ? 'Warning' : 'Normal', reason: event.reason, message: event.message });
  });
}
