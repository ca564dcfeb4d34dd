// Request bodies are checked against JSON Schemas in schemas/api/, compiled once at start-up, and
// bounded in cost before that: no body may cost more to look at than it is worth.
import { Ajv, type ValidateFunction } from 'ajv';
import type { RequestHandler } from 'express';
import { measureJson, settingsProblems } from '../manifests/limits.ts';
import { describeErrors } from '../core/schema-errors.ts';
import { apiError } from '../core/error-catalogue.ts';
import { readProjectJson } from '../core/project.ts';

const ajv = new Ajv({ allErrors: true, strict: true });

/** Any JSON body: room for every field of POST /servers with `settings` at their own limits, and no more. */
export const BODY_LIMITS = { maxBytes: 1024 * 1024, maxDepth: 20, maxEntries: 2000 };

export function compileBodySchema<T>(file: string): ValidateFunction<T> {
  return ajv.compile<T>(readProjectJson(`schemas/api/${file}`));
}

/** Express middleware after the JSON parser: 400 BODY_TOO_COMPLEX for a body nested or sized past BODY_LIMITS. */
export const boundBodyCost: RequestHandler = (req, _res, next) => {
  const { maxDepth, maxEntries } = BODY_LIMITS;
  const shape = measureJson(req.body, BODY_LIMITS);
  if (shape.depth > maxDepth) {
    return next(apiError('BODY_TOO_COMPLEX', `the request body is nested deeper than ${maxDepth} levels: send a flatter body`));
  }
  if (shape.entries > maxEntries) {
    return next(apiError('BODY_TOO_COMPLEX', `the request body holds more than ${maxEntries} keys and array items: send fewer`));
  }
  next();
};

/** Returns the body typed, or throws 400 listing every problem. */
export function checkBody<T>(validate: ValidateFunction<T>, body: unknown): T {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw apiError('INVALID_BODY', 'the request body must be a JSON object (send Content-Type: application/json)');
  }
  if (!validate(body)) {
    const problems = describeErrors(validate.errors).map((p) => p.replace('(top level)', 'body'));
    throw apiError('INVALID_BODY', `the request body is not valid: ${problems.join('; ')}`, { details: { problems } });
  }
  return body;
}

/** 413 SETTINGS_TOO_LARGE for settings past SETTINGS_LIMITS, which hand-written manifests must keep too. */
export function checkSettings(settings: unknown): void {
  const [problem] = settingsProblems(settings);
  if (problem !== undefined) throw apiError('SETTINGS_TOO_LARGE', { problem });
}
