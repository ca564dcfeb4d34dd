// Files that ship beside the code (package.json, schemas/), found the same way whether the
// service runs from src/ or from the compiled dist/src/.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'schemas'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no project root above ${from}`);
  }
}

const PROJECT_ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));

/** The absolute path of a file that ships with the project, such as `schemas/editorserver.schema.json`. */
export function projectFile(relativePath: string): string {
  return join(PROJECT_ROOT, relativePath);
}

export function readProjectJson<T = any>(relativePath: string): T {
  return JSON.parse(readFileSync(projectFile(relativePath), 'utf8')) as T;
}

/** The fields of package.json the service reads. */
export interface PackageJson {
  /** The service's own version, shown by GET /health and the dashboard. */
  version: string;
  engines: { node: string };
  /** The code-server release the project pins, and the Node.js that release bundles. */
  devbox: { codeServer: string; codeServerNode: string };
}

/** package.json, read once at start-up. */
export const PACKAGE_JSON: PackageJson = readProjectJson('package.json');
