// 409 QUOTA_EXCEEDED: a request that would pass a limit per person (capacity.perPerson), with the
// figures of the refusal as its details, so a client can list the servers that use the limit.
import { apiError } from '../core/error-catalogue.ts';
import type { HttpError } from '../core/errors.ts';
import type { QuotaRefusal } from '../index/quota-gate.ts';

/** "server "x" was not started: alice@example.com runs 2 of 2 editors allowed per person (…): a, b; stop one first". */
export function quotaExceeded(what: string, refusal: QuotaRefusal): HttpError {
  const { message: _said, ...details } = refusal;
  return apiError('QUOTA_EXCEEDED', `${what}: ${refusal.message}`, { details });
}
