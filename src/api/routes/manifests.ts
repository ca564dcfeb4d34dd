// GET /manifests: every manifest file with its problems, so a broken hand edit is visible
// without the log, and what the controller noticed (a copied uid or status, a missing file).
// GET /servers/{id}/manifest: one server's file as it is on disk, read as the controller reads it.
import type { Router } from 'express';
import { apiError } from '../../core/error-catalogue.ts';
import { UnreadableEntryError } from '../../manifests/read-entry.ts';
import { findServer, type ServersDeps } from './context.ts';

export function manifestRoutes(deps: ServersDeps, router: Router): void {
  const { store, index } = deps;
  router.get('/manifests', (req, res) => {
    // Only the files of servers the requester may see (a file never valid has no owner: admins only).
    const sees = deps.access.filterFor(req);
    const records = [...index.records.values()].filter((r) => !sees || sees(r.server));
    res.json(records.map((r) => ({
      name: r.name,
      file: store.fileOf(r.name),
      id: r.server?.metadata.uid ?? null,
      valid: r.problems === undefined,
      errors: r.problems ?? [],
      warnings: [...(r.warnings ?? []), ...(r.absence ? [r.absence] : [])],
    })));
  });

  router.get('/servers/:id/manifest', async (req, res) => {
    const record = findServer(deps, req);
    const file = store.fileOf(record.name);
    let yaml: string | undefined;
    try {
      // The folder is untrusted: never through a link, never a FIFO, at most the manifest size limit.
      yaml = await store.readText(record.name);
    } catch (error) {
      if (!(error instanceof UnreadableEntryError)) throw error;
      throw apiError('MANIFEST_UNREADABLE', { file, problem: error.message });
    }
    if (yaml === undefined) {
      throw apiError('MANIFEST_NOT_FOUND', { file, id: req.params.id });
    }
    res.json({ status: 'success', data: { file, yaml } });
  });
}
