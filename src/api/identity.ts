// Deployed as a Databricks app, the platform's front proxy signs users in and forwards who they
// are; a request without those headers did not come through it and is refused.
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { HttpError } from '../core/errors.ts';

const IDENTITY_HEADERS = ['x-forwarded-email', 'x-forwarded-user', 'x-forwarded-preferred-username'];

export function hasForwardedIdentity(req: IncomingMessage): boolean {
  return IDENTITY_HEADERS.some((h) => typeof req.headers[h] === 'string' && req.headers[h] !== '');
}

export const unauthenticated = (): HttpError =>
  new HttpError(401, 'UNAUTHENTICATED', 'this service is reached through the Databricks Apps front door, which signs you in; open the app URL instead');

/** Express middleware: 401 for requests without a forwarded identity. Preflights pass. */
export function requireForwardedIdentity(): RequestHandler {
  return (req, _res, next) => {
    if (req.method === 'OPTIONS' || req.path === '/health' || hasForwardedIdentity(req)) return next();
    next(unauthenticated());
  };
}
