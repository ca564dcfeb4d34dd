// Validates manifests against schemas/editorserver.schema.json, compiled once at start-up.
import { pathToFileURL } from 'node:url';
import { Ajv, type ErrorObject } from 'ajv';
import { projectFile, readProjectJson } from '../core/project.ts';
import { settingsProblems } from './limits.ts';
import { resourceProblems } from './resources.ts';
import type { EditorServer } from './types.ts';

const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
const validate = ajv.compile<EditorServer>(readProjectJson('schemas/editorserver.schema.json'));

/**
 * The first line of every manifest the API writes: editors with yaml-language-server (VS Code's
 * YAML extension) offer completion and validation from it. An absolute path, right wherever
 * DEVBOX_MANIFESTS_DIR is and without a network.
 */
export const SCHEMA_MODELINE = `# yaml-language-server: $schema=${schemaReference(projectFile('schemas/editorserver.schema.json'))}`;

/** The path, or where a space would end the reference early, a file: URL (spaces escaped). */
function schemaReference(path: string): string {
  return /\s/.test(path) ? pathToFileURL(path).href : path;
}

/**
 * The problems of a parsed manifest, empty when it is valid: ajv's, and those JSON Schema cannot
 * say, in ajv's shape so that each can be placed at its field in the file (locateErrors).
 */
export function manifestErrors(value: unknown, fileName?: string): ErrorObject[] {
  const errors = validate(value) ? [] : [...(validate.errors ?? [])];
  // The same limits as POST /servers, so no file carries what the API refuses.
  const settings = (value as EditorServer | null)?.spec?.settings;
  if (settings !== null && typeof settings === 'object') errors.push(...settingsProblems(settings).map((p) => ownError('/spec/settings', p)));
  // A request above its limit, which the cluster would refuse.
  const resources = (value as EditorServer | null)?.spec?.resources;
  if (resources !== null && typeof resources === 'object') {
    errors.push(...resourceProblems(resources).map(([path, message]) => ownError(`/spec/resources/${path.join('/')}`, message)));
  }
  const name = (value as EditorServer | null)?.metadata?.name;
  if (fileName !== undefined && typeof name === 'string' && name !== fileName) {
    errors.push(ownError('/metadata/name', `"${name}" must equal the file name "${fileName}"`));
  }
  return errors;
}

/** A problem of this project's own, described as "<field>: <message>" like ajv's. */
function ownError(instancePath: string, message: string): ErrorObject {
  return { keyword: 'devbox', instancePath, schemaPath: '', params: {}, message };
}
