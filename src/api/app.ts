// The express application: CORS, JSON bodies, the routes, and one error handler.
import express, { type ErrorRequestHandler, type RequestHandler, type Router } from 'express';
import { apiError } from '../core/error-catalogue.ts';
import { HttpError } from '../core/errors.ts';
import { ApiCors } from './cors.ts';
import { BODY_LIMITS, boundBodyCost } from './validation.ts';

const ANY_ORIGIN = new ApiCors({ allowedOrigins: () => ['*'] }).middleware();

/** Turns every error into JSON: HttpError as it says, body-parser's into 400/413, the rest 500. */
export function errorHandler(log: (message: string) => void): ErrorRequestHandler {
  return (error, req, res, _next) => {
    let http: HttpError;
    if (error instanceof HttpError) {
      http = error;
    } else if (error?.type === 'entity.parse.failed') {
      http = apiError('INVALID_JSON', { problem: error.message });
    } else if (error?.type === 'entity.too.large') {
      http = apiError('BODY_TOO_LARGE', `the request body is larger than ${error.limit} bytes: send a smaller body`);
    } else if (typeof error?.status === 'number' && error.status >= 400 && error.status < 500) {
      http = apiError('BAD_REQUEST', error.message, { status: error.status });
    } else {
      log(`${req.method} ${req.originalUrl} failed: ${error?.stack ?? error}`);
      http = apiError('INTERNAL');
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.status(http.status).json({
      status: 'error',
      error: { code: http.code, message: http.message, ...(http.details !== undefined ? { details: http.details } : {}) },
    });
  };
}

export interface AppParts {
  /** Mounted before everything else, so they see every request, preflights and refusals included (the API's timing). */
  first?: RequestHandler[];
  /** The API's CORS headers on every response it makes, and preflights answered; default: every origin allowed. */
  cors?: RequestHandler;
  /** Mounted before the JSON body parser, so proxied bodies stream untouched. */
  before?: RequestHandler[];
  routers: Router[];
  log: (message: string) => void;
}

export function createApp(parts: AppParts): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  for (const handler of parts.first ?? []) app.use(handler);
  app.use(parts.cors ?? ANY_ORIGIN);
  for (const handler of parts.before ?? []) app.use(handler);
  app.use(express.json({ limit: BODY_LIMITS.maxBytes }), boundBodyCost);
  for (const router of parts.routers) app.use(router);
  app.use((req, _res, next) => next(apiError('NOT_FOUND', `no route for ${req.method} ${req.path}`)));
  app.use(errorHandler(parts.log));
  return app;
}
