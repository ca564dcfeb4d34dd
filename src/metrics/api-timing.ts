// How long the API's requests take, by route pattern (`/servers/:id`, never the raw path, so the
// label values stay as few as the routes) and status. Editor proxy paths never reach express.
import type { Request, RequestHandler } from 'express';

/** The route label of a request no route took (a 404, or a refusal before routing such as a 401). */
export const UNMATCHED = 'unmatched';

/** Where the durations go: prom-client's Histogram has this method, and so has the service's PlainHistogram. */
export interface DurationHistogram {
  observe(labels: Record<'method' | 'route' | 'status', string>, seconds: number): void;
}

/** Express middleware, mounted first, that observes each request into `histogram` once its response is done. */
export function timeApiRequests(histogram: DurationHistogram): RequestHandler {
  return (req, res, next) => {
    const began = performance.now();
    res.once('close', () => {
      // A watch stream lasts as long as its client: its length is no request duration.
      if (String(res.getHeader('content-type') ?? '').startsWith('text/event-stream')) return;
      histogram.observe({ method: req.method, route: routeOf(req), status: String(res.statusCode) }, (performance.now() - began) / 1000);
    });
    next();
  };
}

/**
 * Names the route of a request answered before express (GET /servers' fast path), as express
 * would have, so the timing above files it under the same pattern.
 */
export function markRoute(req: object, route: string): void {
  Object.assign(req, { route: { path: route }, baseUrl: '' });
}

/** The pattern of the route that answered: `/servers/:id`; `/assets/*` for a router mounted on a path; else UNMATCHED. */
export function routeOf(req: Request): string {
  const path: unknown = req.route?.path;
  // A route may be declared for several paths (['/', '/index.html']): all of them name it.
  if (typeof path === 'string') return req.baseUrl + path;
  if (Array.isArray(path)) return path.map((p) => req.baseUrl + String(p)).join('|');
  // A handler mounted with router.use('/assets', …) that answered keeps its mount path in baseUrl
  // (every mount path of this service is fixed text, so this is no raw path either).
  return req.baseUrl ? `${req.baseUrl}/*` : UNMATCHED;
}
