// The OpenAPI 3.1 document of the service. The request bodies are the JSON Schemas of schemas/api/
// as the routes check them (each file's title names its route: "POST /servers body"); the
// response shapes are in shapes.ts and the routes in paths.ts. Built once, on first use.
import { readdirSync } from 'node:fs';
import { projectFile, readProjectJson } from '../../core/project.ts';
import { PARAMETERS, PATHS } from './paths.ts';
import { ref, SCHEMAS } from './shapes.ts';

type Json = Record<string, any>;

/** Where the request bodies' schemas are, relative to the project. */
export const REQUEST_SCHEMAS_DIR = 'schemas/api';

/** The HTTP methods an OpenAPI path item may have. */
export const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** `create-server.schema.json` → `CreateServer`, the name of its schema in components.schemas. */
export function requestSchemaName(file: string): string {
  return file.replace(/\.schema\.json$/, '').split('-').map((word) => word[0].toUpperCase() + word.slice(1)).join('');
}

/** The request schema files of schemas/api/, by file name, as they are on disk. */
export function requestSchemaFiles(): Map<string, Json> {
  const dir = projectFile(REQUEST_SCHEMAS_DIR);
  const files = readdirSync(dir).filter((file) => file.endsWith('.schema.json')).sort();
  return new Map(files.map((file) => [file, readProjectJson(`${REQUEST_SCHEMAS_DIR}/${file}`)]));
}

/**
 * A request schema as a Schema Object of OpenAPI 3.1, whose dialect is JSON Schema 2020-12: the
 * file without `$schema` (draft-07) and `$id`. The keywords these files use mean the same in
 * both drafts; one whose meaning changed between them is refused here, so the document never
 * says something other than what the route checks.
 */
export function asSchemaObject(file: string, schema: Json): Json {
  const { $schema: _dialect, $id: _id, ...rest } = schema;
  const changed = (node: unknown, at: string): void => {
    if (Array.isArray(node)) return node.forEach((item, i) => changed(item, `${at}/${i}`));
    if (node === null || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (['definitions', 'dependencies', 'additionalItems', '$ref'].includes(key) || (key === 'items' && Array.isArray(value))) {
        throw new Error(`${REQUEST_SCHEMAS_DIR}/${file}: "${key}" at ${at || '/'} means something else in JSON Schema 2020-12 (OpenAPI 3.1): write it in the form both drafts read alike, or teach src/api/openapi/document.ts to convert it`);
      }
      changed(value, `${at}/${key}`);
    }
  };
  changed(rest, '');
  return rest;
}

/** The route a request schema is for, from its title: `POST /servers/{id}/install-extension body`. */
export function routeOfRequestSchema(file: string, schema: Json): { method: string; path: string } {
  const match = /^(GET|PUT|POST|DELETE|PATCH) (\/\S*) body$/.exec(String(schema.title ?? ''));
  if (!match) throw new Error(`${REQUEST_SCHEMAS_DIR}/${file}: its title must name its route, as "POST /servers body"`);
  return { method: match[1].toLowerCase(), path: match[2] };
}

/** The package's name, version, description and license: the document's info. */
const PACKAGE = readProjectJson<{ name: string; version: string; description: string; license: string }>('package.json');

const DESCRIPTION = `${PACKAGE.description}

Each call writes the desired state into the server's manifest, then waits (bounded) for the
controller to report the outcome, as \`kubectl wait\` does: a 202 says the wait ended first and
the controller goes on. \`{id}\` is a server's id. JSON bodies are at most 1 MB, 20 levels deep
and 2,000 keys and array items in all.

Every refusal is the error envelope \`{"status": "error", "error": {"code", "message", "details"?}}\`:
the code is stable, the message says what to change. A path or method the service does not
have is 404 \`NOT_FOUND\` ("no route for …").

Every API response carries the API's CORS headers (\`Access-Control-Allow-Origin: *\` unless the
config's \`api.allowedOrigins\` narrows it), and every \`OPTIONS\` preflight is answered 204;
editor pages under \`/vscode/\` never carry them. Run locally, the service needs no sign-in and
answers only for its own host names; deployed as a Databricks app, every request comes through
the platform's sign-on (401 \`UNAUTHENTICATED\` otherwise).`;

const TAGS = [
  { name: 'servers', description: 'Create, read, start, stop and delete editor servers.' },
  { name: 'multi-step', description: 'A server made in steps: metadata, extensions, group settings, workspace, then start.' },
  { name: 'templates', description: 'The template gallery.' },
  { name: 'logs', description: 'Live log streams (WebSocket).' },
  { name: 'snapshots', description: 'Work kept at the persistence target (DEVBOX_PERSIST_TO): snapshots, restores, undoing a delete.' },
  { name: 'audit', description: 'The audit trail: every change by a person or by the controller, chained by hash.' },
  { name: 'service', description: 'The service itself: health, metrics, configuration, GitOps sync, this document.' },
  { name: 'editor proxy', description: 'Browser traffic to a running server\'s code-server.' },
  { name: 'dashboard', description: 'The web dashboard\'s page and files.' },
];

/** Builds the document anew (openApiDocument() keeps one). */
export function buildOpenApiDocument(): Json {
  const paths: Json = structuredClone(PATHS);
  const schemas: Json = {};
  for (const [file, schema] of requestSchemaFiles()) {
    const name = requestSchemaName(file);
    if (SCHEMAS[name]) throw new Error(`${REQUEST_SCHEMAS_DIR}/${file}: its name ${name} is a response shape's already`);
    schemas[name] = asSchemaObject(file, schema);
    const { method, path } = routeOfRequestSchema(file, schema);
    const operation = paths[path]?.[method];
    if (!operation) throw new Error(`${REQUEST_SCHEMAS_DIR}/${file} is for ${method.toUpperCase()} ${path}, which src/api/openapi/paths.ts does not describe`);
    operation.requestBody = { required: true, content: { 'application/json': { schema: ref(name) } } };
  }
  return {
    openapi: '3.1.0',
    info: { title: PACKAGE.name, version: PACKAGE.version, description: DESCRIPTION, license: { name: PACKAGE.license, identifier: PACKAGE.license } },
    servers: [{ url: '/' }],
    tags: TAGS,
    paths,
    components: { schemas: { ...schemas, ...structuredClone(SCHEMAS) }, parameters: structuredClone(PARAMETERS) },
  };
}

let document: Json | undefined;

/** The document, built on first use and kept. */
export function openApiDocument(): Json {
  return (document ??= buildOpenApiDocument());
}
