// The server lifecycle API: each call writes desired state into the manifest, then waits
// (bounded) for the controller to report the outcome, like `kubectl wait`.
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { Router, type Request, type Response } from 'express';
import type { Controller } from '../controller/controller.ts';
import { unknownExtensionGroups } from '../config/settings.ts';
import type { ServerRecord } from '../controller/reconciler.ts';
import type { ManifestStore } from '../manifests/store.ts';
import { API_VERSION, KIND, RESTARTED_AT, type EditorServer, type Phase, type RestartPolicy } from '../manifests/types.ts';
import { checkHealth } from '../runtime/health.ts';
import type { StatsSampler } from '../runtime/stats.ts';
import type { DataLayout } from '../workspace/layout.ts';
import { formatLogLine, parseLinesParam, type LogHub } from '../logs/index.ts';
import { HttpError, notFound } from '../core/errors.ts';
import { checkBody, checkSettings, compileBodySchema } from './validation.ts';
import { createdView, lifecycleView, serverView, statusOf } from './views.ts';

export interface ServersDeps {
  store: ManifestStore;
  controller: Controller;
  stats: StatsSampler;
  logs: LogHub;
  layout: DataLayout;
  /** The config's extension groups, by name. */
  extensionGroups: Record<string, string[]>;
  /** Why no editor may have this port (the service's own), completing "port N is …"; else undefined. */
  excludedPort: (port: number) => string | undefined;
  startTimeoutMs: number;
  stopTimeoutMs: number;
}

interface CreateBody {
  name: string;
  extensions?: string[];
  extension_groups?: string[];
  port?: number;
  restart_policy?: RestartPolicy;
  settings?: Record<string, unknown>;
}

/** How long POST /servers waits for the port and workspace before answering with what it has. */
const CREATE_WAIT_MS = 10_000;

const validateCreate = compileBodySchema<CreateBody>('create-server.schema.json');

/** A DNS-1123 label made from a display name: "Data Pipeline!" → "data-pipeline". */
export function slugify(displayName: string): string {
  const slug = displayName.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 50);
  return slug.replace(/-+$/, '') || 'server';
}

const phaseIs = (...phases: Phase[]) => (record: ServerRecord | undefined) =>
  record?.server?.status?.phase !== undefined && phases.includes(record.server.status.phase);

export function serversRouter(deps: ServersDeps): Router {
  const { store, controller, stats } = deps;
  const reconciler = controller.reconciler;
  const router = Router();

  const folderMissing = () => new HttpError(503, 'MANIFESTS_FOLDER_MISSING',
    `the manifests folder ${store.dir} is missing: bring it back (the service waits for it), then try again`);

  /** The record behind an :id, or 404. */
  function find(req: Request): ServerRecord {
    const id = String(req.params.id);
    const name = reconciler.nameOfUid(id);
    const record = name === undefined ? undefined : reconciler.records.get(name);
    if (!record?.server) throw notFound(id);
    return record;
  }

  /** Changes the spec through the store; 404 if the file vanished, 409 if it is now invalid. */
  async function updateSpec(record: ServerRecord, change: (server: EditorServer, set: (path: string[], value: unknown) => void) => void) {
    const result = await store.update(record.name, (doc, server) => {
      change(server, (path, value) => doc.setIn(path, value));
      doc.setIn(['metadata', 'generation'], (server.metadata.generation ?? 1) + 1);
    });
    if (result === 'missing') {
      // A server paused by a missing folder is still there: say why it cannot change now.
      if (!existsSync(store.dir)) throw folderMissing();
      throw notFound(record.server!.metadata.uid ?? record.name);
    }
    if (result === 'invalid') {
      throw new HttpError(409, 'MANIFEST_INVALID', `the manifest ${store.fileOf(record.name)} is invalid; fix it by hand first: ${(record.problems ?? []).join('; ')}`);
    }
    controller.enqueue(record.name);
  }

  function envelope(record: ServerRecord, message: string) {
    return { status: 'success', message, data: lifecycleView(record) };
  }

  router.get('/servers', (_req, res) => {
    const list = [...reconciler.records.values()]
      .filter((r) => r.server?.metadata.uid)
      .map((r) => serverView(r, stats.get(r.server!.status?.pid)));
    res.json(list);
  });

  /**
   * Every manifest file with its problems, so a broken hand edit is visible without the log,
   * and what the controller noticed (a copied uid or status, a missing file).
   */
  router.get('/manifests', (_req, res) => {
    res.json([...reconciler.records.values()].map((r) => ({
      name: r.name,
      file: store.fileOf(r.name),
      id: r.server?.metadata.uid ?? null,
      valid: r.problems === undefined,
      errors: r.problems ?? [],
      warnings: [...(r.warnings ?? []), ...(r.absence ? [r.absence] : [])],
    })));
  });

  router.post('/servers', async (req, res) => {
    const body = checkBody(validateCreate, req.body);
    checkSettings(body.settings);
    const unknownGroups = unknownExtensionGroups(deps.extensionGroups, body.extension_groups);
    if (unknownGroups.length > 0) {
      throw new HttpError(400, 'INVALID_BODY', `extension_groups: unknown group ${unknownGroups.map((g) => `"${g}"`).join(', ')}; the config defines ${Object.keys(deps.extensionGroups).join(', ') || 'none'}`);
    }
    const displayName = body.name.trim();
    const uid = randomUUID();
    const base = slugify(displayName);
    let name = base;
    const server: EditorServer = {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name, uid, generation: 1 },
      spec: {
        displayName,
        running: false,
        ...(body.port !== undefined ? { port: body.port } : {}),
        ...(body.restart_policy ? { restartPolicy: body.restart_policy } : {}),
        ...(body.extension_groups ? { extensionGroups: body.extension_groups } : {}),
        extensions: body.extensions ?? [],
        ...(body.settings ? { settings: body.settings } : {}),
      },
    };
    // The port is held before the manifest exists, so two creates never both get one, and a
    // full range is refused at once. It is held under a key no server name can be, and handed
    // to the name the moment its file exists.
    const ports = reconciler.ports;
    const claim = `create:${uid}`;
    if (body.port !== undefined) {
      const excluded = deps.excludedPort(body.port);
      if (excluded !== undefined) throw new HttpError(409, 'PORT_TAKEN', `port ${body.port} is ${excluded}: choose another port or leave it out`);
      const owner = [...reconciler.records.values()].find((r) => r.server && (r.server.spec.port ?? r.server.status?.port) === body.port);
      if (owner) throw new HttpError(409, 'PORT_TAKEN', `port ${body.port} belongs to server "${owner.server!.spec.displayName ?? owner.name}": choose another port or leave it out`);
      if (!ports.reserve(claim, body.port)) {
        const holder = ports.owner(body.port);
        throw new HttpError(409, 'PORT_TAKEN', holder?.startsWith('create:')
          ? `port ${body.port} is being given to another server created just now: choose another port or leave it out`
          : `port ${body.port} belongs to server "${holder}": choose another port or leave it out`);
      }
    } else if ((await ports.allocate(claim)) === undefined) {
      const { min, max } = ports.range;
      throw new HttpError(409, 'NO_FREE_PORT', `no free port left in ${min}-${max}: delete a server, or widen ports in the config`);
    }
    try {
      // Claim a free name: data-pipeline, data-pipeline-2, … Folders (or a port) still held for
      // a name whose manifest went are never handed to a new server.
      for (let n = 1; ; n++) {
        if (n > 1) name = server.metadata.name = `${base}-${n}`;
        if (!existsSync(deps.layout.workspace(name)) && !existsSync(deps.layout.editor(name).root) && ports.portOf(name) === undefined
          && (await store.create(server, () => ports.transfer(claim, name)))) break;
        if (n > 1000) throw new Error(`could not find a free manifest name for "${displayName}"`);
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        throw folderMissing();
      }
      throw error;
    } finally {
      ports.release(claim);
    }
    controller.enqueue(name);
    const record = await controller.waitFor(
      name,
      (r) => Boolean(r?.server?.status?.port && r.server.status.workspacePath) && !phaseIs('Pending', 'Provisioning')(r),
      Math.max(deps.startTimeoutMs, CREATE_WAIT_MS),
    );
    // Created either way: the manifest is written and the controller will provision it. A busy
    // machine only means the answer shows it still provisioning, without a port yet.
    res.status(201).json(createdView(record?.server ? record : { name, server }));
  });

  router.post('/servers/refresh-all', async (_req, res) => {
    const records = [...reconciler.records.values()].filter((r) => r.server?.metadata.uid);
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

  router.get('/servers/:id', (req, res) => {
    const record = find(req);
    res.json(serverView(record, stats.get(record.server!.status?.pid)));
  });

  router.post('/servers/:id/start', async (req, res) => {
    const record = find(req);
    const server = record.server!;
    if (server.spec.running && server.status?.phase === 'Running') {
      res.json(envelope(record, `server "${server.spec.displayName}" is already running`));
      return;
    }
    // A failed editor is started again with a restart request, as the spec may already say running.
    const stamp = server.status?.phase === 'Failed' ? restartStamp() : undefined;
    await updateSpec(record, (_s, set) => {
      set(['spec', 'running'], true);
      if (stamp) set(['metadata', 'annotations', RESTARTED_AT], stamp);
    });
    await respondWhenStarted(record, res, 'started', stamp);
  });

  router.post('/servers/:id/stop', async (req, res) => {
    const record = find(req);
    await updateSpec(record, (_s, set) => set(['spec', 'running'], false));
    const done = await controller.waitFor(record.name, (r) => !r?.server || phaseIs('Stopped', 'Failed')(r), deps.stopTimeoutMs);
    if (!done?.server) throw notFound(String(req.params.id));
    const settled = done.server.status?.phase === 'Stopped';
    res.status(settled ? 200 : 202).json(envelope(done, settled
      ? `server "${done.server.spec.displayName}" stopped`
      : `server "${done.server.spec.displayName}" is still stopping`));
  });

  router.post('/servers/:id/restart', async (req, res) => {
    const record = find(req);
    const stamp = restartStamp();
    await updateSpec(record, (_s, set) => {
      set(['spec', 'running'], true);
      set(['metadata', 'annotations', RESTARTED_AT], stamp);
    });
    await respondWhenStarted(record, res, 'restarted', stamp);
  });

  router.delete('/servers/:id', async (req, res) => {
    const record = find(req);
    const id = record.server!.metadata.uid!;
    const displayName = record.server!.spec.displayName;
    const result = await store.update(record.name, (doc, server) => {
      if (server.metadata.deletionTimestamp) return false;
      doc.setIn(['metadata', 'deletionTimestamp'], new Date().toISOString());
    });
    // A whole folder away pauses its servers: the file comes back with them, so nothing is deleted now.
    if (result === 'missing' && !existsSync(store.dir)) throw folderMissing();
    // A file that is missing or invalid cannot carry the mark: the controller is told instead.
    if (result === 'invalid' || result === 'missing') reconciler.requestDeletion(record.name);
    controller.enqueue(record.name);
    const done = await controller.waitFor(record.name, (r) => r === undefined, deps.stopTimeoutMs + 10_000);
    res.status(done === undefined ? 200 : 202).json({
      status: 'success',
      message: done === undefined ? `server "${displayName}" deleted` : `server "${displayName}" is being deleted`,
      data: { id },
    });
  });

  router.get('/servers/:id/health', async (req, res) => {
    const record = find(req);
    const server = record.server!;
    const pid = server.status?.pid ?? null;
    const processExists = pid !== null && reconciler.isProcessAlive(record.name);
    const port = server.spec.port ?? server.status?.port;
    const http = processExists && port ? await checkHealth(port) : { ok: false };
    const usage = stats.get(pid);
    res.json({
      status: 'success',
      data: {
        status: statusOf(server),
        http_healthy: http.ok,
        cpu_percent: usage?.cpuPercent ?? 0,
        memory_mb: usage?.memoryMb ?? 0,
        uptime_seconds: processExists && server.status?.startTime ? (Date.now() - Date.parse(server.status.startTime)) / 1000 : 0,
        process_exists: processExists,
      },
    });
  });

  router.get('/servers/:id/logs', (req, res) => {
    const record = find(req);
    const lines = parseLinesParam(req.query.lines);
    res.json({ status: 'success', data: { logs: deps.logs.tail(record.name, lines).map(formatLogLine) } });
  });

  router.post('/servers/:id/refresh-status', async (req, res) => {
    res.json(await refresh(find(req)));
  });

  /** Compares the real process and /healthz with the recorded status, and corrects it. */
  async function refresh(record: ServerRecord) {
    const before = record.server!;
    const oldStatus = statusOf(before);
    const port = before.spec.port ?? before.status?.port;
    const pid = before.status?.pid ?? null;
    const alive = pid !== null && reconciler.isProcessAlive(record.name);
    const health = alive && port ? await checkHealth(port) : { ok: false, error: 'no process' };
    if (alive) reconciler.recordHealth(record.name, health.ok);
    await controller.reconcileNow(record.name);
    const after = reconciler.records.get(record.name)?.server ?? before;
    const newStatus = reconciler.records.has(record.name) ? statusOf(after) : 'deleted';
    return {
      status: 'success',
      id: before.metadata.uid,
      name: before.spec.displayName ?? record.name,
      port: port ?? null,
      old_status: oldStatus,
      new_status: newStatus,
      pid_status: pid === null ? 'no process recorded' : alive ? `process ${pid} is running` : `process ${pid} no longer exists`,
      healthz_status: health.ok
        ? `GET /healthz on port ${port} answered${'state' in health && health.state ? ` (${health.state})` : ''}`
        : `GET /healthz on port ${port ?? '-'} did not answer: ${health.error ?? 'no process'}`,
      updated: oldStatus !== newStatus,
    };
  }

  /** Waits for Running or Failed; with a restart stamp, only an outcome of that request counts. */
  async function respondWhenStarted(record: ServerRecord, res: Response, verb: string, stamp?: string) {
    const done = await controller.waitFor(
      record.name,
      (r) => !r?.server || (phaseIs('Running', 'Failed')(r) && (!stamp || r.server.status?.observedRestartedAt === stamp)),
      // A restart first stops the editor, which has its own bound.
      verb === 'restarted' ? deps.startTimeoutMs + deps.stopTimeoutMs : deps.startTimeoutMs,
    );
    if (!done?.server) throw notFound(record.server!.metadata.uid!);
    const server = done.server;
    const display = server.spec.displayName ?? done.name;
    if (server.status?.phase === 'Running') {
      res.json(envelope(done, `server "${display}" ${verb} on port ${server.status.port}`));
    } else if (server.status?.phase === 'Failed') {
      throw new HttpError(500, 'EDITOR_FAILED', `server "${display}" failed to start (${server.status.reason}): ${server.status.message ?? 'see GET /servers/{id}/logs'}`, lifecycleView(done));
    } else {
      res.status(202).json(envelope(done, `server "${display}" is still starting; poll GET /servers/${server.metadata.uid}`));
    }
  }

  return router;
}

let lastStamp = '';
/** A restart request stamp, unique even for two requests in the same millisecond. */
function restartStamp(): string {
  let stamp = new Date().toISOString();
  if (stamp <= lastStamp) stamp = new Date(Date.parse(lastStamp) + 1).toISOString();
  lastStamp = stamp;
  return stamp;
}
