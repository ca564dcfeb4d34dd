// Deployed as a Databricks app, the platform's front proxy signs users in and forwards who they
// are; a request without those headers did not come through it and is refused.
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { apiError } from '../core/error-catalogue.ts';
import type { HttpError } from '../core/errors.ts';

/**
 * The front proxy sends both on every request it lets through. X-Forwarded-Preferred-Username
 * alone does not count: the proxy never sends it without them, so it names nobody it signed in.
 */
const IDENTITY_HEADERS = ['x-forwarded-email', 'x-forwarded-user'] as const;

/** Who the front proxy says sent the request: the email, else the user id; undefined when neither is there. */
export function forwardedUser(req: IncomingMessage): string | undefined {
  for (const name of IDENTITY_HEADERS) {
    const value = req.headers[name];
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
  }
  return undefined;
}

export function hasForwardedIdentity(req: IncomingMessage): boolean {
  return forwardedUser(req) !== undefined;
}

export const unauthenticated = (): HttpError => apiError('UNAUTHENTICATED');

/**
 * Express middleware: 401 for every request without a forwarded identity, GET /health included.
 * (A CORS preflight is answered before it, by the CORS middleware: 204 and headers, no data.)
 */
export function requireForwardedIdentity(): RequestHandler {
  return (req, _res, next) => {
    if (hasForwardedIdentity(req)) return next();
    next(unauthenticated());
  };
}
