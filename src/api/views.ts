// Turns controller records into the JSON shapes clients read: server records, envelopes, views.
import { pidOf as pidOfRef } from '../runtime/interface.ts';
import type { ServerRecord } from '../index/records.ts';
import { displayNameOf, type EditorServer, type Phase } from '../manifests/types.ts';
import type { ProcessStats } from '../runtime/stats.ts';
import { ownerOf, sharedWithOf } from './access.ts';

/**
 * The interface's status word for each phase: `running` and `stopped` once settled. A server
 * still being prepared (workspace, extensions) has no editor yet: it is `stopped` until it is
 * asked to run, as the interface's state table has every create answer; the progress itself is
 * in `phase`, the conditions and the events.
 */
const STATUS: Record<Phase, string> = {
  Pending: 'stopped',
  Provisioning: 'stopped',
  Stopped: 'stopped',
  Starting: 'starting',
  Running: 'running',
  Stopping: 'stopping',
  Failed: 'failed',
  Terminating: 'stopping',
};

export function statusOf(server: EditorServer): string {
  const phase = server.status?.phase ?? 'Pending';
  // Asked to run while still being prepared: on its way to `running`.
  if ((phase === 'Pending' || phase === 'Provisioning') && server.spec.running) return 'starting';
  return STATUS[phase];
}

/** The record's `pid`: a local process's, derived from the runtime's reference; null for none, or for an editor that is not a local process. */
export function pidOf(server: EditorServer): number | null {
  return pidOfRef(server.status?.runtimeRef);
}

/** Seconds since the editor started (a record's `uptime`); 0 when none runs. */
export function uptimeOf(startTime: string | null): number {
  return startTime ? Math.max(0, (Date.now() - Date.parse(startTime)) / 1000) : 0;
}

/** The full server record (2.1), with the manifest's own words alongside; `persistence` is null without a persistence target. */
export function serverView(record: ServerRecord, stats: ProcessStats | undefined, persistence: object | null = null) {
  const server = record.server!;
  const status = server.status;
  const pid = pidOf(server);
  // Whenever an editor runs, a process or not (a Pod has no pid here).
  const startTime = status?.runtimeRef ? status.startTime ?? null : null;
  return {
    id: server.metadata.uid ?? null,
    name: displayNameOf(server),
    port: server.spec.port ?? status?.port ?? null,
    workspace_path: status?.workspacePath ?? null,
    extensions: server.spec.extensions ?? [],
    status: statusOf(server),
    pid,
    start_time: startTime,
    uptime: uptimeOf(startTime),
    cpu_percent: stats?.cpuPercent ?? 0,
    memory_mb: stats?.memoryMb ?? 0,
    manifest: server.metadata.name,
    // Who created it (the annotation devbox.dev/owner), null when nobody signed in did.
    owner: ownerOf(server) ?? null,
    // Who else may open and use it under `access: owner` (spec.access.sharedWith, normalised).
    shared_with: [...sharedWithOf(server)],
    phase: status?.phase ?? 'Pending',
    reason: status?.reason ?? null,
    message: status?.message ?? null,
    restart_policy: server.spec.restartPolicy ?? 'Never',
    // spec.idleTimeoutSeconds (null: the config's editor.idleTimeoutSeconds applies), and when the controller stopped it for idleness.
    idle_timeout_seconds: server.spec.idleTimeoutSeconds ?? null,
    idle_stopped_at: status?.idleStoppedAt ?? null,
    // spec.resources (CPU and memory in Kubernetes' shape), null when the manifest gives none.
    resources: server.spec.resources ?? null,
    extension_status: status?.extensions ?? [],
    // What the controller has checked on the way to running: WorkspaceReady, ExtensionsInstalled, Ready…
    conditions: status?.conditions ?? [],
    // Spec changes counted, and the last one the controller has finished acting on.
    generation: server.metadata.generation ?? null,
    observed_generation: status?.observedGeneration ?? null,
    // Its snapshots (src/persistence): last_snapshot_at, last_snapshot_id, size_bytes, files, last_error, in_progress.
    persistence,
    // What it took from its workspace's devcontainer.json (status.devcontainer); null before it was looked for.
    devcontainer: status?.devcontainer ?? null,
    ...(record.problems ? { manifest_errors: record.problems } : {}),
  };
}

/** The create operation's subset. */
export function createdView(record: ServerRecord) {
  const { id, name, port, workspace_path, extensions, status, pid } = serverView(record, undefined);
  return { id, name, port, workspace_path, extensions, status, pid };
}

/** data of start, stop and restart. */
export function lifecycleView(record: ServerRecord) {
  const server = record.server!;
  return { id: server.metadata.uid, status: statusOf(server), pid: pidOf(server) };
}
