// GET /manifests: every manifest file with its problems, so a broken hand edit is visible
// without the log, and what the controller noticed (a copied uid or status, a missing file).
import type { Router } from 'express';
import type { ServersDeps } from './context.ts';

export function manifestRoutes(deps: ServersDeps, router: Router): void {
  const { store, controller } = deps;
  router.get('/manifests', (req, res) => {
    // Only the files of servers the requester may see (a file never valid has no owner: admins only).
    const sees = deps.access.filterFor(req);
    const records = [...controller.reconciler.records.values()].filter((r) => !sees || sees(r.server));
    res.json(records.map((r) => ({
      name: r.name,
      file: store.fileOf(r.name),
      id: r.server?.metadata.uid ?? null,
      valid: r.problems === undefined,
      errors: r.problems ?? [],
      warnings: [...(r.warnings ?? []), ...(r.absence ? [r.absence] : [])],
    })));
  });
}
