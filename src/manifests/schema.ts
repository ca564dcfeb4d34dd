// Validates manifests against schemas/editorserver.schema.json, compiled once at start-up.
import { Ajv, type ErrorObject } from 'ajv';
import { readProjectJson } from '../project.ts';
import { settingsProblems } from './limits.ts';
import type { EditorServer } from './types.ts';

const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
const validate = ajv.compile<EditorServer>(readProjectJson('schemas/editorserver.schema.json'));

/** Turns ajv's errors into lines a person can act on: `spec.port: must be <= 65535`. */
export function describeErrors(errors: ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((e) => {
    const where = e.instancePath ? e.instancePath.slice(1).replaceAll('/', '.') : '(top level)';
    if (e.keyword === 'additionalProperties') {
      return `${where}: unknown field "${(e.params as { additionalProperty: string }).additionalProperty}"`;
    }
    if (e.keyword === 'enum') return `${where}: ${e.message} (${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')})`;
    if (e.keyword === 'const') return `${where}: must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}`;
    if (e.keyword === 'pattern' && where === 'metadata.name') return `${where}: must be a DNS-1123 label (lower-case letters, digits and "-", at most 63)`;
    if (e.keyword === 'pattern' && where === 'name') return 'name: must not be blank';
    return `${where}: ${e.message}`;
  });
}

/** Returns the list of problems with a parsed manifest, empty when it is valid. */
export function validateManifest(value: unknown, fileName?: string): string[] {
  const problems = validate(value) ? [] : describeErrors(validate.errors);
  // Beyond what JSON Schema can say; the same limits as POST /servers, so no file carries what the API refuses.
  const settings = (value as EditorServer | null)?.spec?.settings;
  if (settings !== null && typeof settings === 'object') problems.push(...settingsProblems(settings).map((p) => `spec.settings: ${p}`));
  const name = (value as EditorServer | null)?.metadata?.name;
  if (fileName !== undefined && typeof name === 'string' && name !== fileName) {
    problems.push(`metadata.name: "${name}" must equal the file name "${fileName}"`);
  }
  return problems;
}
