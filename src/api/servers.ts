// The server API, by area: CRUD and the watch stream, the multi-step extension routes, lifecycle,
// health and refresh, logs and events, snapshots, the manifests listing, and templates
// (each in src/api/routes/). Routes change desired state in the manifest and read the controller's.
import { Router } from 'express';
import type { TemplateCatalog } from '../templates/catalog.ts';
import type { ServersDeps } from './routes/context.ts';
import { eventRoutes } from './routes/events.ts';
import { extensionRoutes } from './routes/extensions.ts';
import { healthRoutes } from './routes/health.ts';
import { lifecycleRoutes } from './routes/lifecycle.ts';
import { logRoutes } from './routes/logs.ts';
import { manifestRoutes } from './routes/manifests.ts';
import { serversCrudRoutes } from './routes/servers-crud.ts';
import { sharingRoutes } from './routes/sharing.ts';
import { snapshotRoutes } from './routes/snapshots.ts';
import { templateRoutes } from './routes/templates.ts';
import { watchRoutes } from './routes/watch.ts';
import { workspaceSourceRoutes } from './routes/workspace-sources.ts';

export type { ServersDeps };

export function serversRouter(deps: ServersDeps, templates?: TemplateCatalog): Router {
  const router = Router();
  manifestRoutes(deps, router);
  // Ahead of the listing: GET /servers?watch=1 streams, the plain GET /servers goes on to it.
  if (deps.watch) watchRoutes(deps.watch, router);
  serversCrudRoutes(deps, router);
  if (templates) templateRoutes(deps, templates, router);
  extensionRoutes(deps, router);
  workspaceSourceRoutes(deps, router);
  healthRoutes(deps, router);
  lifecycleRoutes(deps, router);
  logRoutes(deps, router);
  eventRoutes(deps, router);
  snapshotRoutes(deps, router);
  sharingRoutes(deps, router);
  return router;
}
