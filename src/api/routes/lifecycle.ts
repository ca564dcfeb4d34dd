// POST /servers/{id}/start, /stop, /restart and DELETE /servers/{id}: each writes desired state
// into the manifest, then waits (bounded) for the controller to report the outcome, like `kubectl wait`.
import type { Response, Router } from 'express';
import { apiError, notFound } from '../../core/error-catalogue.ts';
import type { Admission } from '../../index/commands.ts';
import type { ServerRecord } from '../../index/records.ts';
import { displayNameOf, heldForCapacity, RESTARTED_AT } from '../../manifests/types.ts';
import { restartStamp } from '../naming.ts';
import { quotaExceeded } from '../quota-errors.ts';
import { lifecycleView } from '../views.ts';
import { envelope, findServer, folderMissing, ownedByRepository, phaseIs, updateSpec, type ServersDeps } from './context.ts';

export function lifecycleRoutes(deps: ServersDeps, router: Router): void {
  const { store, commands } = deps;

  router.post('/servers/:id/start', async (req, res) => {
    const record = findServer(deps, req);
    const server = record.server!;
    if (server.spec.running && server.status?.phase === 'Running') {
      res.json(envelope(record, `server "${displayNameOf(server)}" is already running`));
      return;
    }
    // A failed editor, or one stopped to make room, is started again with a restart request, as the spec may already say running.
    const stamp = server.status?.phase === 'Failed' || (server.status && heldForCapacity(server.status)) ? restartStamp() : undefined;
    const admission = await withRoom(record, () => updateSpec(deps, record, (_s, set) => {
      set(['spec', 'running'], true);
      if (stamp) set(['metadata', 'annotations', RESTARTED_AT], stamp);
    }));
    // Stopped for idleness: the spec says running already, so the controller is told to lift the stop.
    commands.wake(record.name, 'POST /servers/{id}/start');
    await respondWhenStarted(record, res, 'started', stamp, admission?.kind === 'makingRoom');
  });

  router.post('/servers/:id/stop', async (req, res) => {
    const record = findServer(deps, req);
    await updateSpec(deps, record, (_s, set) => set(['spec', 'running'], false));
    const done = await commands.waitFor(record.name, (r) => !r?.server || phaseIs('Stopped', 'Failed')(r), deps.stopTimeoutMs);
    if (!done?.server) throw notFound(String(req.params.id));
    const settled = done.server.status?.phase === 'Stopped';
    res.status(settled ? 200 : 202).json(envelope(done, settled
      ? `server "${displayNameOf(done.server)}" stopped`
      : `server "${displayNameOf(done.server)}" is still stopping`));
  });

  router.post('/servers/:id/restart', async (req, res) => {
    const record = findServer(deps, req);
    const stamp = restartStamp();
    const admission = await withRoom(record, () => updateSpec(deps, record, (_s, set) => {
      set(['spec', 'running'], true);
      set(['metadata', 'annotations', RESTARTED_AT], stamp);
    }));
    await respondWhenStarted(record, res, 'restarted', stamp, admission?.kind === 'makingRoom');
  });

  router.delete('/servers/:id', async (req, res) => {
    const record = findServer(deps, req);
    // Those it is shared with use it; only its owner and the admins delete it.
    if (!deps.access.manages(deps.access.requester(req.headers), record.server)) throw apiError('OWNER_ONLY', { server: displayNameOf(record.server!), act: 'delete it' });
    const owned = ownedByRepository(deps, record, (file) => `delete ${file}`);
    if (owned) throw owned;
    const id = record.server!.metadata.uid!;
    const displayName = displayNameOf(record.server!);
    const result = await store.update(record.name, (doc, server) => {
      if (server.metadata.deletionTimestamp) return false;
      doc.setIn(['metadata', 'deletionTimestamp'], new Date().toISOString());
    });
    // A whole folder away pauses its servers: the file comes back with them, so nothing is deleted now.
    if (result === 'missing' && (await store.folderIdentity()) === undefined) throw folderMissing(store);
    // A file that is missing or invalid cannot carry the mark: the controller is told instead.
    if (result === 'invalid' || result === 'missing') commands.requestDeletion(record.name);
    commands.enqueue(record.name);
    const done = await commands.waitFor(record.name, (r) => r === undefined, deps.stopTimeoutMs + 10_000);
    res.status(done === undefined ? 200 : 202).json({
      status: 'success',
      message: done === undefined ? `server "${displayName}" deleted` : `server "${displayName}" is being deleted`,
      data: { id },
    });
  });

  /**
   * Holds a slot for the server's start before anything is written, or refuses it with 409
   * CAPACITY_EXCEEDED or QUOTA_EXCEEDED (the same decision the controller makes before it spawns); a write that
   * fails frees the slot again.
   */
  async function withRoom(record: ServerRecord, write: () => Promise<void>): Promise<Admission | undefined> {
    const admission = deps.capacity?.admit(record.name);
    if (admission?.kind === 'refused') {
      const display = displayNameOf(record.server!);
      if (admission.quota) throw quotaExceeded(`server "${display}" was not started`, admission.quota);
      throw apiError('CAPACITY_EXCEEDED', `server "${display}" was not started: ${admission.message}`, { details: { limit: admission.limit } });
    }
    try {
      await write();
    } catch (error) {
      deps.capacity?.release(record.name);
      throw error;
    }
    return admission;
  }

  /**
   * Waits for Running or Failed; with a restart stamp, only an outcome of that request counts.
   * A restart, or a start that first stops an idle editor to make room, waits for that stop too.
   */
  async function respondWhenStarted(record: ServerRecord, res: Response, verb: string, stamp?: string, makingRoom = false) {
    const done = await commands.waitFor(
      record.name,
      (r) => !r?.server || (phaseIs('Running', 'Failed')(r) && (!stamp || r.server.status?.observedRestartedAt === stamp)),
      // A restart first stops the editor, which has its own bound.
      verb === 'restarted' || makingRoom ? deps.startTimeoutMs + deps.stopTimeoutMs : deps.startTimeoutMs,
    );
    if (!done?.server) throw notFound(record.server!.metadata.uid!);
    const server = done.server;
    const display = displayNameOf(server);
    if (server.status?.phase === 'Running') {
      res.json(envelope(done, `server "${display}" ${verb} on port ${server.status.port}`));
    } else if (server.status?.phase === 'Failed' && server.status.reason === 'HostRequirementsUnmet') {
      throw apiError('HOST_REQUIREMENTS_UNMET', `server "${display}" cannot start: ${server.status.message}`, { details: lifecycleView(done) });
    } else if (server.status?.phase === 'Failed') {
      throw apiError('EDITOR_FAILED', `server "${display}" failed to start (${server.status.reason}): ${server.status.message ?? 'see GET /servers/{id}/logs'}`, { details: lifecycleView(done) });
    } else {
      // Why, when status says (Pending, Unschedulable: the cluster has no room; ImagePullBackOff …).
      const why = server.status?.reason ? ` (${server.status.reason}${server.status.message ? `: ${server.status.message}` : ''})` : '';
      res.status(202).json(envelope(done, `server "${display}" is still starting${why}; poll GET /servers/${server.metadata.uid}`));
    }
  }
}
