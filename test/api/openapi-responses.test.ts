// The answers of the running service against the response shapes GET /openapi.json documents:
// a server taken through every step (created, in steps and with a workspace, started, read,
// refreshed, stopped, deleted), its log stream and watch events, and the errors. Each body must
// validate against the documented schema, and carry no field the document does not name.
import AdmZip from 'adm-zip';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentSchemas, pointer } from '../helpers/openapi.ts';
import { postForm } from '../helpers/form.ts';
import { opened } from '../helpers/net.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';
import { openWatch } from '../helpers/watch-stream.ts';

let service: TestService;
let doc: any;
let schemas: ReturnType<typeof documentSchemas>;

beforeAll(async () => {
  service = await startTestService({
    config: { extensionGroups: { data: { name: 'data', description: 'data tools', extensions: ['acme.csv'], user_settings: { 'csv.rows': 100 } } } },
  });
  doc = (await service.request('GET', '/openapi.json')).body;
  schemas = documentSchemas(doc);
});

afterAll(async () => {
  await service?.stop();
});

/** Fields of `value` the schema does not name (objects without additionalProperties), by path. */
function undocumented(schema: any, value: any, at = ''): string[] {
  if (schema?.$ref) return undocumented(schemas.raw(schema.$ref.slice(1)), value, at);
  const alternatives = schema?.anyOf ?? schema?.oneOf;
  if (alternatives) {
    const fits = alternatives.find((alt: any) => schemas.ajv.validate(alt.$ref ? { $ref: `https://devbox.dev/openapi.json${alt.$ref}` } : alt, value));
    return fits ? undocumented(fits, value, at) : [];
  }
  if (Array.isArray(value)) return value.flatMap((item, i) => undocumented(schema?.items, item, `${at}/${i}`));
  // An object the schema leaves open (no properties named, or more allowed) has nothing to check.
  if (value === null || typeof value !== 'object' || !schema?.properties || schema.additionalProperties !== undefined) return [];
  const properties = schema.properties ?? {};
  return Object.entries(value).flatMap(([key, item]) =>
    key in properties ? undocumented(properties[key], item, `${at}/${key}`) : [`${at}/${key}`]);
}

/** Checks a JSON body against the documented response of the operation for this status. */
function expectDocumented(method: string, path: string, answer: { status: number; body: unknown }, media = 'application/json', at?: string) {
  const responses = doc.paths[path]?.[method]?.responses;
  expect(responses, `${method.toUpperCase()} ${path} is not documented`).toBeDefined();
  const code = String(answer.status) in responses ? String(answer.status) : 'default';
  expect(responses[code], `${method.toUpperCase()} ${path} answered ${answer.status}, which is not documented: ${JSON.stringify(answer.body)}`).toBeDefined();
  const where = at ?? pointer('paths', path, method, 'responses', code, 'content', media, 'schema');
  const validate = schemas.at(where);
  const valid = validate(answer.body);
  expect(valid ? [] : validate.errors, `${method.toUpperCase()} ${path} ${answer.status}: ${JSON.stringify(answer.body)}`).toEqual([]);
  expect(undocumented(schemas.raw(where), answer.body), `fields of ${method.toUpperCase()} ${path} the document does not name`).toEqual([]);
}

const zip = (): Buffer => {
  const archive = new AdmZip();
  archive.addFile('README.md', Buffer.from('# shapes\n'));
  return archive.toBuffer();
};

describe('the answers of the service are the documented shapes', () => {
  it('for the service\'s own routes', async () => {
    for (const [method, path] of [['get', '/health'], ['get', '/config'], ['get', '/templates'], ['get', '/manifests'], ['post', '/sync'], ['post', '/servers/refresh-all']]) {
      expectDocumented(method, path, await service.request(method.toUpperCase(), path));
    }
  });

  it('for a server from its creation to its deletion', async () => {
    const created = await service.request('POST', '/servers', { name: 'Shapes', extensions: ['acme.csv'] });
    expectDocumented('post', '/servers', created);
    const id = created.body.id;
    const started = await service.request('POST', `/servers/${id}/start`);
    expect(started.status).toBe(200);
    expectDocumented('post', '/servers/{id}/start', started);
    // A record read while the editor runs: pid, start time and figures filled in.
    expectDocumented('get', '/servers', await service.request('GET', '/servers'));
    expectDocumented('get', '/servers', await service.request('GET', '/servers?'));
    expectDocumented('get', '/servers/{id}', await service.request('GET', `/servers/${id}`));
    for (const route of ['health', 'logs', 'events', 'manifest']) {
      expectDocumented('get', `/servers/{id}/${route}`, await service.request('GET', `/servers/${id}/${route}`));
    }
    expectDocumented('post', '/servers/{id}/refresh-status', await service.request('POST', `/servers/${id}/refresh-status`));
    expectDocumented('post', '/servers/refresh-all', await service.request('POST', '/servers/refresh-all'));
    expectDocumented('post', '/servers/{id}/restart', await service.request('POST', `/servers/${id}/restart`));
    expectDocumented('post', '/servers/{id}/stop', await service.request('POST', `/servers/${id}/stop`));
    expectDocumented('delete', '/servers/{id}', await service.request('DELETE', `/servers/${id}`));
  });

  it('for a server made in steps, and one made with a workspace', async () => {
    const created = await service.request('POST', '/servers/create-metadata', { name: 'Steps' });
    expectDocumented('post', '/servers/create-metadata', created);
    const id = created.body.id;
    expectDocumented('post', '/servers/{id}/install-extensions', await service.request('POST', `/servers/${id}/install-extensions`, { extensions: ['acme.one'] }));
    expectDocumented('post', '/servers/{id}/install-extension', await service.request('POST', `/servers/${id}/install-extension`, { extension: 'acme.two' }));
    expectDocumented('post', '/servers/{id}/apply-group-settings', await service.request('POST', `/servers/${id}/apply-group-settings`, { groupName: 'data' }));
    const cloned = await postForm(`${service.url}/servers/${id}/clone-workspace`, {}, zip());
    expect(cloned.status).toBe(200);
    expectDocumented('post', '/servers/{id}/clone-workspace', cloned);
    const withWorkspace = await postForm(`${service.url}/servers/create-with-workspace`, { name: 'Zipped', extensions: '[]' }, zip());
    expect(withWorkspace.status).toBe(201);
    expectDocumented('post', '/servers/create-with-workspace', withWorkspace);
  });

  it('for the log stream\'s frames and the watch stream\'s events', async () => {
    const { body: { id } } = await service.request('POST', '/servers', { name: 'Streams' });
    await service.request('POST', `/servers/${id}/start`);
    const frames: unknown[] = [];
    // Listening before the socket opens: the replayed lines come with the handshake's answer.
    const socket = new WebSocket(`${service.url.replace('http', 'ws')}/ws/logs/${id}?tail=20`);
    socket.on('message', (data) => frames.push(JSON.parse(String(data))));
    try {
      await opened(socket);
      await eventually(() => frames.length > 0);
      const at = pointer('paths', '/ws/logs/{id}', 'get', 'responses', '101', 'content', 'application/json', 'schema');
      for (const frame of frames) expectDocumented('get', '/ws/logs/{id}', { status: 101, body: frame }, undefined, at);
    } finally {
      socket.close();
    }
    const watch = await openWatch(service.url);
    try {
      await watch.next((event) => event.type === 'SYNCED');
      const at = pointer('paths', '/servers', 'get', 'responses', '200', 'content', 'text/event-stream', 'x-event-data');
      for (const { type, object } of watch.events) expectDocumented('get', '/servers', { status: 200, body: { type, object } }, undefined, at);
    } finally {
      watch.close();
    }
  });

  it('for errors', async () => {
    expectDocumented('get', '/servers/{id}', await service.request('GET', '/servers/00000000-0000-4000-8000-00000000dead'));
    expectDocumented('post', '/servers', await service.request('POST', '/servers', { name: '' }));
    expectDocumented('post', '/servers', await service.request('POST', '/servers', '{"name": '));
    expectDocumented('get', '/servers/{id}/logs', await service.request('GET', '/servers/00000000-0000-4000-8000-00000000dead/logs?lines=many'));
  });

  it('would see a field the document does not name', () => {
    const where = pointer('components', 'schemas', 'Lifecycle');
    expect(undocumented(schemas.raw(where), { id: 'x', status: 'running', pid: 1, surprise: true })).toEqual(['/surprise']);
  });
});
