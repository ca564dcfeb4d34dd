// GET /openapi.json against the running service: a valid OpenAPI 3.1 document, whose request
// bodies are the schemas of schemas/api/ themselves, and which names every route the service
// answers while every route it names answers, so the document and the service cannot drift apart.
import { readdirSync, readFileSync } from 'node:fs';
import { compileErrors, validate } from '@readme/openapi-parser';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { requestSchemaName } from '../../src/api/openapi/document.ts';
import { projectFile } from '../../src/core/project.ts';
import { documentSchemas, expressRoutes, operationsOf, schemaPointers, type ExpressRoute } from '../helpers/openapi.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { startTestService, type TestService } from '../helpers/service.ts';

/** An id no server has, a port no editor listens on, and a file no build has. */
const PLACEHOLDERS: Record<string, string> = { id: '00000000-0000-4000-8000-00000000dead', port: '1', path: 'x', file: 'no-such-file.js' };

let service: TestService;
let app: express.Express;
let doc: any;

beforeAll(async () => {
  // The service keeps its express app to itself: it is taken here as express makes it.
  const init = vi.spyOn(express.application, 'init');
  try {
    service = await startTestService();
    app = init.mock.contexts.at(-1) as express.Express;
  } finally {
    init.mockRestore();
  }
  const answer = await service.request('GET', '/openapi.json');
  expect(answer.status).toBe(200);
  expect(answer.headers.get('content-type')).toMatch(/^application\/json\b/);
  doc = answer.body;
});

afterAll(async () => {
  await service?.stop();
});

/** The documented path of a route, or undefined. */
const documented = (method: string, path: string) => doc.paths[path]?.[method];

/**
 * True for the service's 404 for a path or method it has no route for, express's or the WebSocket
 * upgrade's (a 404 for an unknown id is another one: SERVER_NOT_FOUND).
 */
function noRoute(status: number | undefined, body: any): boolean {
  return status === 404 && body?.error?.code === 'NOT_FOUND' && /^(no route for |there is no WebSocket at this path)/.test(body.error.message);
}

/** A WebSocket handshake, read raw: 101, or the refusal's status and envelope. */
function handshake(path: string) {
  return rawRequest(service.port, `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${service.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
    + 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n');
}

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document, by the official schema and the rules it cannot express', async () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe(JSON.parse(readFileSync(projectFile('package.json'), 'utf8')).version);
    expect(doc.servers).toEqual([{ url: '/' }]);
    const result = await validate(structuredClone(doc));
    expect(result.valid ? '' : compileErrors(result)).toBe('');
    expect(result.warnings).toEqual([]);
  });

  it('holds only Schema Objects that are valid JSON Schema 2020-12, strictly', () => {
    const schemas = documentSchemas(doc);
    const problems: string[] = [];
    for (const at of schemaPointers(doc)) {
      if (!schemas.ajv.validateSchema(schemas.raw(at))) problems.push(`${at}: ${schemas.ajv.errorsText()}`);
      try {
        schemas.at(at);
      } catch (error) {
        problems.push(`${at}: ${(error as Error).message}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('answers the same document on every request, with the API\'s CORS headers', async () => {
    const again = await service.request('GET', '/openapi.json', undefined, { Origin: 'http://tools.example' });
    expect(again.body).toEqual(doc);
    expect(again.headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('the request bodies', () => {
  const files = readdirSync(projectFile('schemas/api')).filter((file) => file.endsWith('.schema.json'));

  it.each(files)('of %s are that schema, on the route its title names', (file) => {
    const { $schema: _dialect, $id: _id, ...schema } = JSON.parse(readFileSync(projectFile(`schemas/api/${file}`), 'utf8'));
    const name = requestSchemaName(file);
    expect(doc.components.schemas[name]).toEqual(schema);
    const [, method, path] = /^(\w+) (\S+) body$/.exec(schema.title)!;
    expect(documented(method.toLowerCase(), path)?.requestBody?.content).toEqual({ 'application/json': { schema: { $ref: `#/components/schemas/${name}` } } });
  });

  it('are described for every route that takes a body', () => {
    const withoutBody = operationsOf(doc).filter(({ method, operation }) => method === 'post' && operation.tags[0] !== 'editor proxy' && !operation.requestBody);
    // These take none: they act on the server the path names, or on all of them.
    expect(withoutBody.map(({ path }) => path).sort()).toEqual([
      '/servers/refresh-all', '/servers/{id}/refresh-status', '/servers/{id}/restart', '/servers/{id}/snapshot', '/servers/{id}/start', '/servers/{id}/stop',
      '/snapshots/deleted/{name}/restore', '/sync',
    ]);
  });
});

describe('the routes', () => {
  it('the service answers in express are all documented', () => {
    const routes = expressRoutes(app);
    // Sanity: the stack was read (a change in express's internals must not pass as "nothing to check").
    expect(routes).toContainEqual({ method: 'post', path: '/servers/{id}/start' });
    const missing = routes.filter((route: ExpressRoute) => route.method === 'use'
      // A handler mounted at a path answers beneath it: some documented path must lie there.
      ? !Object.keys(doc.paths).some((path) => path.startsWith(`${route.path}/`))
      : !documented(route.method, route.path));
    expect(missing).toEqual([]);
  });

  it('the service answers outside express (WebSockets, the editor proxy) are all documented', async () => {
    // The service's own list, from its answer to an upgrade it has no WebSocket for.
    const refused = await handshake('/no-websocket-here');
    expect(refused.status).toBe(404);
    const named: string[] = refused.body.error.message.match(/\/[\w/{}]*/g);
    expect(named.length).toBeGreaterThan(0);
    for (const path of named) {
      const trimmed = path.replace(/\/$/, '');
      const match = Object.entries(doc.paths).find(([documentedPath]) => documentedPath === trimmed || documentedPath.startsWith(`${trimmed}/`));
      expect(match, `${path}, a WebSocket path the service names, is not in the document`).toBeDefined();
      expect((match![1] as any).get, `${path} is documented without GET, the method of a WebSocket handshake`).toBeDefined();
    }
  });

  it('the document names all answer, each with a status it documents', async () => {
    const problems: string[] = [];
    for (const { method, path, operation } of operationsOf(doc)) {
      const target = path.replace(/\{(\w+)\}/g, (_, name) => PLACEHOLDERS[name] ?? name);
      let status: number | undefined;
      let body: any;
      if (operation['x-websocket']) {
        ({ status, body } = await handshake(target));
      } else {
        // A body where one is taken: an empty object, which every body schema refuses.
        ({ status, body } = await service.request(method.toUpperCase(), target, method === 'get' || method === 'delete' ? undefined : {}));
      }
      const codes = Object.keys(operation.responses);
      if (noRoute(status, body)) problems.push(`${method.toUpperCase()} ${path}: the service has no route for it`);
      else if (!codes.includes(String(status)) && !codes.includes('default')) {
        problems.push(`${method.toUpperCase()} ${target} answered ${status}, which the document does not list (${codes.join(', ')}): ${JSON.stringify(body).slice(0, 200)}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('would see an undocumented route and a route that does not exist', async () => {
    // The checks above can fail: a route the service lacks answers "no route", and one it has that
    // the document lacks is found in the stack.
    const absent = await service.request('POST', `/servers/${PLACEHOLDERS.id}/hibernate`);
    expect(noRoute(absent.status, absent.body)).toBe(true);
    const noSocket = await handshake('/ws/logz');
    expect(noRoute(noSocket.status, noSocket.body)).toBe(true);
    const unknownServer = await service.request('POST', `/servers/${PLACEHOLDERS.id}/start`);
    expect(unknownServer.status).toBe(404);
    expect(noRoute(unknownServer.status, unknownServer.body)).toBe(false);
    app.router.get('/undocumented-for-a-moment', (_req, res) => void res.end());
    try {
      expect(expressRoutes(app)).toContainEqual({ method: 'get', path: '/undocumented-for-a-moment' });
    } finally {
      app.router.stack.pop();
    }
  });
});
