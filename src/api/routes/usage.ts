// GET /servers/{id}/usage and GET /usage: CPU and memory of a server, and the fleet's running
// editors, memory and idle stops, over a window of the history the service keeps
// (src/metrics/usage-history.ts). A server's usage is read as its other reads are: an id the
// requester may not see is 404. The fleet's figures are totals, as GET /health's capacity section
// gives them: no server is named in them.
import { Router } from 'express';
import { apiError } from '../../core/error-catalogue.ts';
import type { UsageHistory } from '../../metrics/usage-history.ts';
import { findServer, type ServersDeps } from './context.ts';

export interface UsageRouteDeps extends Pick<ServersDeps, 'index' | 'access'> {
  usage: UsageHistory;
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "90s", "30m", "2h", "1d", or a bare number of seconds, as ms; NaN for anything else. */
function durationMs(text: string): number {
  const match = /^(\d{1,7})([smhd]?)$/.exec(text.trim());
  return match ? Number(match[1]) * UNIT_MS[match[2] || 's'] : Number.NaN;
}

/** "1 min", "6 h", "90 s": a duration as the refusal states it. */
function spoken(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${ms / 1000} s`;
}

/** `?window=` of the usage routes: one bucket up to the whole history; the whole history when absent. */
export function parseWindow(value: unknown, usage: Pick<UsageHistory, 'bucketMs' | 'spanMs'>): number {
  if (value === undefined) return usage.spanMs;
  const ms = typeof value === 'string' ? durationMs(value) : Number.NaN;
  if (!(ms >= usage.bucketMs && ms <= usage.spanMs)) {
    throw apiError('INVALID_WINDOW', { value, min: spoken(usage.bucketMs), max: spoken(usage.spanMs) });
  }
  return ms;
}

export function usageRouter(deps: UsageRouteDeps): Router {
  const router = Router();
  router.get('/servers/:id/usage', (req, res) => {
    const record = findServer(deps, req);
    const window = parseWindow(req.query.window, deps.usage);
    res.json({ status: 'success', data: deps.usage.server(record.name, window) });
  });
  router.get('/usage', (req, res) => {
    const window = parseWindow(req.query.window, deps.usage);
    res.json({ status: 'success', data: deps.usage.fleet(window) });
  });
  return router;
}
