// GET /servers/{id}/logs: the server's last log lines (the WebSocket streams are in logs/stream.ts).
import type { Router } from 'express';
import { formatLogLine, parseLinesParam } from '../../logs/index.ts';
import { findServer, type ServersDeps } from './context.ts';

export function logRoutes(deps: ServersDeps, router: Router): void {
  router.get('/servers/:id/logs', (req, res) => {
    const record = findServer(deps, req);
    const lines = parseLinesParam(req.query.lines);
    res.json({ status: 'success', data: { logs: deps.logs.tail(record.name, lines).map(formatLogLine) } });
  });
}
