// GET /servers/{id}/events: what recently happened to a server (phases, reasons, conditions, an
// invalid manifest), oldest first, as the controller recorded it (src/index/server-events.ts).
import type { Router } from 'express';
import { findServer, type ServersDeps } from './context.ts';

export function eventRoutes(deps: ServersDeps, router: Router): void {
  router.get('/servers/:id/events', (req, res) => {
    const record = findServer(deps, req);
    res.json({ status: 'success', data: { events: deps.index.eventsOf(record.name) } });
  });
}
