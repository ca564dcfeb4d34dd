// Request bodies are checked against JSON Schemas in schemas/api/, compiled once at start-up.
import { Ajv, type ValidateFunction } from 'ajv';
import { describeErrors } from '../manifests/schema.ts';
import { HttpError } from './errors.ts';
import { readProjectJson } from '../project.ts';

const ajv = new Ajv({ allErrors: true, strict: true });

export function compileBodySchema<T>(file: string): ValidateFunction<T> {
  return ajv.compile<T>(readProjectJson(`schemas/api/${file}`));
}

/** Returns the body typed, or throws 400 listing every problem. */
export function checkBody<T>(validate: ValidateFunction<T>, body: unknown): T {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new HttpError(400, 'INVALID_BODY', 'the request body must be a JSON object (send Content-Type: application/json)');
  }
  if (!validate(body)) {
    const problems = describeErrors(validate.errors).map((p) => p.replace('(top level)', 'body'));
    throw new HttpError(400, 'INVALID_BODY', `the request body is not valid: ${problems.join('; ')}`, { problems });
  }
  return body;
}
