// GET /servers/{id}/health, POST /servers/{id}/refresh-status and POST /servers/refresh-all:
// the real process and /healthz compared with the recorded status.
import { describeRef, pidOf, type RuntimeRef } from '../../runtime/interface.ts';
import type { Router } from 'express';
import type { ServerRecord } from '../../index/records.ts';
import { displayNameOf } from '../../manifests/types.ts';
import { checkHealth } from '../../runtime/health.ts';
import { statusOf } from '../views.ts';
import { findServer, type ServersDeps } from './context.ts';

export function healthRoutes(deps: ServersDeps, router: Router): void {
  const { index, commands, stats } = deps;

  router.post('/servers/refresh-all', async (req, res) => {
    // Only the servers the requester may see: another user's are neither refreshed nor counted.
    const sees = deps.access.filterFor(req);
    const records = [...index.records.values()].filter((r) => r.server?.metadata.uid && (!sees || sees(r.server)));
    const servers = await Promise.all(records.map((r) => refresh(r)));
    const updated = servers.filter((s) => s.updated).length;
    res.json({
      status: 'success',
      total_servers: servers.length,
      updated,
      message: `refreshed ${servers.length} server${servers.length === 1 ? '' : 's'}, ${updated} changed`,
      servers,
    });
  });

  router.get('/servers/:id/health', async (req, res) => {
    const record = findServer(deps, req);
    const server = record.server!;
    const processExists = Boolean(server.status?.runtimeRef) && index.editorRuns(record.name);
    const endpoint = index.endpointOf(record.name);
    const http = processExists && endpoint ? await checkHealth(endpoint) : { ok: false };
    const usage = processExists ? stats.get(record.name) : undefined;
    res.json({
      status: 'success',
      data: {
        status: statusOf(server),
        http_healthy: http.ok,
        cpu_percent: usage?.cpuPercent ?? 0,
        memory_mb: usage?.memoryMb ?? 0,
        uptime_seconds: processExists && server.status?.startTime ? (Date.now() - Date.parse(server.status.startTime)) / 1000 : 0,
        process_exists: processExists,
        log_lines_dropped: deps.logs.dropped(record.name),
      },
    });
  });

  router.post('/servers/:id/refresh-status', async (req, res) => {
    res.json(await refresh(findServer(deps, req)));
  });

  /** Compares the real process and /healthz with the recorded status, and corrects it. */
  async function refresh(record: ServerRecord) {
    const before = record.server!;
    const oldStatus = statusOf(before);
    const port = before.spec.port ?? before.status?.port;
    const alive = Boolean(before.status?.runtimeRef) && index.editorRuns(record.name);
    const endpoint = index.endpointOf(record.name);
    const health = alive && endpoint ? await checkHealth(endpoint) : { ok: false, error: 'no process' };
    if (alive) commands.recordHealth(record.name, health.ok);
    await commands.reconcileNow(record.name);
    const after = index.records.get(record.name)?.server ?? before;
    const newStatus = index.records.has(record.name) ? statusOf(after) : 'deleted';
    return {
      status: 'success',
      id: before.metadata.uid,
      name: displayNameOf(before),
      port: port ?? null,
      old_status: oldStatus,
      new_status: newStatus,
      pid_status: editorStatus(before.status?.runtimeRef, alive),
      healthz_status: health.ok
        ? `GET /healthz on port ${port} answered${'state' in health && health.state ? ` (${health.state})` : ''}`
        : `GET /healthz on port ${port ?? '-'} did not answer: ${health.error ?? 'no process'}`,
      updated: oldStatus !== newStatus,
    };
  }
}

/** What refresh-status says of the recorded editor: `process 123 is running` for a local process. */
function editorStatus(ref: RuntimeRef | null | undefined, alive: boolean): string {
  if (!ref) return 'no process recorded';
  const pid = pidOf(ref);
  const what = pid !== null ? `process ${pid}` : `editor ${describeRef(ref)}`;
  return alive ? `${what} is running` : `${what} no longer exists`;
}
