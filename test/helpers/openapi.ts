// Reading the service's OpenAPI document in tests: its operations, its Schema Objects compiled as
// JSON Schema 2020-12 (strict), and the routes an express app answers, read from its router stack.
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { Express } from 'express';
import { METHODS } from '../../src/api/openapi/document.ts';

type Json = Record<string, any>;

export interface Operation {
  method: string;
  /** The path as the document has it: `/servers/{id}/start`. */
  path: string;
  operation: Json;
}

/** Every operation of the document, path by path. */
export function operationsOf(doc: Json): Operation[] {
  return Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({ method, path, operation: item[method] })));
}

/** JSON Pointer of `keys` (escaped). */
export const pointer = (...keys: string[]): string => keys.map((k) => `/${k.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');

/** Pointers of every Schema Object the document holds: components, parameters, media types (x-event-data too). */
export function schemaPointers(doc: Json): string[] {
  const found: string[] = Object.keys(doc.components.schemas).map((name) => pointer('components', 'schemas', name));
  const parameters = (at: string[], list: Json[] | undefined) =>
    (list ?? []).forEach((p, i) => p.schema && found.push(pointer(...at, 'parameters', String(i), 'schema')));
  const contents = (at: string[], content: Json | undefined) => {
    for (const [type, media] of Object.entries(content ?? {})) {
      for (const key of ['schema', 'x-event-data']) if (media[key]) found.push(pointer(...at, 'content', type, key));
    }
  };
  for (const [name, p] of Object.entries(doc.components.parameters ?? {})) if ((p as Json).schema) found.push(pointer('components', 'parameters', name, 'schema'));
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    parameters(['paths', path], item.parameters);
    for (const method of METHODS.filter((m) => item[m])) {
      const at = ['paths', path, method];
      parameters(at, item[method].parameters);
      contents([...at, 'requestBody'], item[method].requestBody?.content);
      for (const [code, response] of Object.entries(item[method].responses as Json)) contents([...at, 'responses', code], response.content);
    }
  }
  return found;
}

const BASE = 'https://devbox.dev/openapi.json';

/**
 * An Ajv for the document's Schema Objects: JSON Schema 2020-12 in strict mode (an unknown
 * keyword, a wrong type name, a bad `required` all throw), with the document's own `$ref`s
 * resolved. `at(pointer)` compiles the schema at that pointer.
 */
export function documentSchemas(doc: Json) {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
  ajv.addFormat('date-time', (text: string) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(text) && !Number.isNaN(Date.parse(text)));
  // The document itself is no schema: its Schema Objects are reached by pointer.
  for (const keyword of Object.keys(doc)) ajv.addKeyword(keyword);
  ajv.addSchema({ ...doc, $id: BASE });
  return {
    ajv,
    at: (at: string) => ajv.compile({ $ref: `${BASE}#${at}` }),
    /** The Schema Object at the pointer, as the document has it. */
    raw: (at: string) => at.split('/').slice(1).reduce((node: any, key) => node?.[key.replaceAll('~1', '/').replaceAll('~0', '~')], doc),
  };
}

export interface ExpressRoute {
  /** A route's method in lower case, or `use` for a handler mounted at a path (it answers everything under it). */
  method: string;
  /** In OpenAPI's form: `/servers/{id}`. */
  path: string;
}

/** Every route of an express 5 app: its router's stack, routers mounted in it included. */
export function expressRoutes(app: Express): ExpressRoute[] {
  const routes: ExpressRoute[] = [];
  const walk = (stack: any[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const path of [layer.route.path].flat()) {
          for (const method of Object.keys(layer.route.methods)) routes.push({ method, path: openApiPath(prefix + path) });
        }
      } else if (Array.isArray(layer.handle?.stack)) {
        walk(layer.handle.stack, layer.slash ? prefix : prefix + layer.rawPath);
      } else if (!layer.slash) {
        for (const path of [layer.rawPath].flat()) routes.push({ method: 'use', path: openApiPath(prefix + path) });
      }
    }
  };
  walk((app as any).router.stack, '');
  return routes;
}

/** `/servers/:id` → `/servers/{id}`; express patterns OpenAPI cannot say (`*splat`, `{optional}`) are refused. */
function openApiPath(path: unknown): string {
  if (typeof path !== 'string' || /[*{}()]/.test(path)) {
    throw new Error(`the route ${String(path)} is not a plain path: test/helpers/openapi.ts must learn to describe it`);
  }
  return path.replace(/:(\w+)/g, '{$1}');
}
