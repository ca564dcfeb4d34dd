// The service's wire format as a client that knows only the interface sees it: the status word
// after every create path and every transition of the state table (create → stopped with pid
// null, start → running with a pid, stop → stopped, restart → running with a new pid, refresh,
// delete → 200), and the cross-origin headers on every route family, errors and /ws/logs included,
// for a request that comes from a page of another origin.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { postForm } from '../helpers/form.ts';
import { eventually, processExists, startTestService, type TestService } from '../helpers/service.ts';
import { writeTemplate } from '../templates/fixtures.ts';
import { makeRepo, serveGitDaemon, type GitDaemon } from '../workspace/git-fixtures.ts';
import { buildZip } from '../workspace/zip-fixtures.ts';

const ORIGIN = 'http://tools.example';
const RECORD_FIELDS = ['id', 'name', 'port', 'workspace_path', 'extensions', 'status', 'pid', 'start_time', 'uptime', 'cpu_percent', 'memory_mb'];

let service: TestService;
let daemon: GitDaemon;
let scratch: string;
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  scratch = await fs.mkdtemp(join(tmpdir(), 'devbox-contract-'));
  await makeRepo(scratch, 'project');
  daemon = await serveGitDaemon(scratch);
  const templatesDir = join(scratch, 'templates');
  await fs.mkdir(templatesDir);
  await writeTemplate(templatesDir, 'plain', { name: 'Plain', tab: 'Starters', spec: { extensions: ['acme.quick'] } });
  service = await startTestService({ templatesDir });
});
afterAll(async () => {
  await service?.stop();
  await daemon?.stop();
  await fs.rm(scratch, { recursive: true, force: true });
});

/** The interface's "create" row: 201, status stopped, pid null, a port and a workspace path. */
function expectCreated(answer: { status: number; body: any }, what: string) {
  expect(answer.status, `${what}: ${JSON.stringify(answer.body)}`).toBe(201);
  expect(answer.body.status, what).toBe('stopped');
  expect(Number.isInteger(answer.body.port), what).toBe(true);
  expect(typeof answer.body.workspace_path, what).toBe('string');
  if ('pid' in answer.body) expect(answer.body.pid, what).toBeNull();
}

describe('the state table, as a client that knows only the interface sees it', () => {
  it('every create path leaves the server stopped with pid null (HTTP 201)', async () => {
    process.env.STUB_HANG_INSTALL_OF = 'acme.slow';
    try {
      const plain = await service.request('POST', '/servers', { name: 'Plain', extensions: [] });
      expectCreated(plain, 'POST /servers');
      expect(Object.keys(plain.body).sort()).toEqual(['extensions', 'id', 'name', 'pid', 'port', 'status', 'workspace_path']);
      // An install still running when the answer goes: the word is still the table's.
      const installing = await service.request('POST', '/servers', { name: 'Installing', extensions: ['acme.quick', 'acme.slow'] });
      expectCreated(installing, 'POST /servers with a long install');
      cleanups.push(() => service.request('DELETE', `/servers/${installing.body.id}`));
      const metadata = await service.request('POST', '/servers/create-metadata', { name: 'Steps' });
      expectCreated(metadata, 'create-metadata');
      expect(metadata.body.extensions).toEqual([]);
      expectCreated(await postForm(`${service.url}/servers/create-with-workspace`, { name: 'Cloned', extensions: '[]', github_url: daemon.url('project') }), 'create-with-workspace (git)');
      const zip = buildZip([{ name: 'hello.txt', data: 'hello\n' }]);
      expectCreated(await postForm(`${service.url}/servers/create-with-workspace`, { name: 'Zipped', extensions: '["acme.quick"]' }, zip), 'create-with-workspace (ZIP)');
      expectCreated(await service.request('POST', '/servers/create-from-template', { name: 'Templated', template_id: 'plain', tab_name: 'Starters' }), 'create-from-template');
      // And the list says the same of each, with every field of the record.
      for (const record of (await service.request('GET', '/servers')).body) {
        for (const field of RECORD_FIELDS) expect(record, `${record.name}.${field}`).toHaveProperty(field);
        expect(record.status, record.name).toBe('stopped');
        expect(record.pid, record.name).toBeNull();
      }
    } finally {
      delete process.env.STUB_HANG_INSTALL_OF;
      // Deleting the server ends its hanging installer.
      for (const cleanup of cleanups.splice(0)) await cleanup();
    }
  });

  it('start, restart, refresh, stop and delete say what the table says', async () => {
    const { body: created } = await service.request('POST', '/servers', { name: 'Walker' });
    const start = await service.request('POST', `/servers/${created.id}/start`);
    expect(start.status).toBe(200);
    expect(start.body).toMatchObject({ status: 'success', data: { id: created.id, status: 'running' } });
    expect(start.body.message).toMatch(/started/);
    const firstPid = start.body.data.pid;
    expect(Number.isInteger(firstPid) && processExists(firstPid)).toBe(true);

    const restart = await service.request('POST', `/servers/${created.id}/restart`);
    expect(restart.body).toMatchObject({ status: 'success', data: { id: created.id, status: 'running' } });
    expect(restart.body.message).toMatch(/restarted/);
    expect(restart.body.data.pid).not.toBe(firstPid);
    expect(processExists(restart.body.data.pid)).toBe(true);

    const refresh = await service.request('POST', `/servers/${created.id}/refresh-status`);
    expect(refresh.body).toMatchObject({ id: created.id, name: 'Walker', old_status: 'running', new_status: 'running', updated: false });
    for (const field of ['status', 'port', 'pid_status', 'healthz_status']) expect(refresh.body).toHaveProperty(field);
    const all = await service.request('POST', '/servers/refresh-all');
    expect(all.body).toMatchObject({ status: 'success', updated: 0 });
    expect(all.body.total_servers).toBe(all.body.servers.length);

    const health = await service.request('GET', `/servers/${created.id}/health`);
    expect(health.body).toMatchObject({ status: 'success', data: { status: 'running', process_exists: true } });

    const stop = await service.request('POST', `/servers/${created.id}/stop`);
    expect(stop.status).toBe(200);
    expect(stop.body).toMatchObject({ status: 'success', data: { id: created.id, status: 'stopped', pid: null } });
    expect(stop.body.message).toBe('server "Walker" stopped');
    expect(processExists(restart.body.data.pid)).toBe(false);

    const deleted = await service.request('DELETE', `/servers/${created.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.message).toBe('server "Walker" deleted');
    expect((await service.request('GET', `/servers/${created.id}`)).status).toBe(404);
  });

  it('names a hand-written server without spec.displayName by its manifest name in every message', async () => {
    await fs.writeFile(join(service.settings.manifestsDir, 'handmade.yaml'),
      'apiVersion: devbox.dev/v1alpha1\nkind: EditorServer\nmetadata:\n  name: handmade\nspec:\n  running: false\n');
    const record = await eventuallyRecord('handmade');
    expect(record.name).toBe('handmade');
    const start = await service.request('POST', `/servers/${record.id}/start`);
    expect(start.body.message).toMatch(/^server "handmade" started/);
    const stop = await service.request('POST', `/servers/${record.id}/stop`);
    expect(stop.body.message).toBe('server "handmade" stopped');
    const deleted = await service.request('DELETE', `/servers/${record.id}`);
    expect(deleted.body.message).toBe('server "handmade" deleted');
  });
});

function eventuallyRecord(manifest: string): Promise<{ id: string; name: string }> {
  return eventually(async () => {
    const list = (await service.request('GET', '/servers')).body as Array<{ id: string | null; name: string; manifest: string }>;
    const found = list.find((s) => s.manifest === manifest);
    return found?.id ? (found as { id: string; name: string }) : undefined;
  });
}

describe('cross-origin headers, for a page of another origin', () => {
  const expectCors = (headers: Headers, what: string) => {
    expect(headers.get('access-control-allow-origin'), what).toBe('*');
    expect(headers.get('access-control-allow-methods'), what).toBe('GET, POST, PUT, DELETE, OPTIONS');
    expect(headers.get('access-control-allow-headers'), what).toBe('Content-Type, Authorization');
  };
  const call = (method: string, path: string, body?: string, headers: Record<string, string> = {}) =>
    fetch(`${service.url}${path}`, { method, headers: { Origin: ORIGIN, ...(body ? { 'Content-Type': 'application/json' } : {}), ...headers }, body });

  it('are on every API route family, successes and errors alike, and no request is refused for its Origin', async () => {
    const { body: server } = await service.request('POST', '/servers', { name: 'Cross' });
    const cases: Array<[string, string, string | undefined, number]> = [
      ['GET', '/health', undefined, 200],
      ['GET', '/config', undefined, 200],
      ['GET', '/templates', undefined, 200],
      ['GET', '/servers', undefined, 200],
      ['GET', `/servers/${server.id}`, undefined, 200],
      ['GET', `/servers/${server.id}/logs?lines=5`, undefined, 200],
      ['GET', `/servers/${server.id}/health`, undefined, 200],
      ['POST', '/servers', '{"name":"From a portal"}', 201],
      ['POST', '/servers', '{"name":', 400],
      ['POST', '/servers', '{"extensions":[]}', 400],
      ['GET', '/servers/no-such-id', undefined, 404],
      ['POST', '/servers/no-such-id/start', undefined, 404],
      ['GET', '/no-such-route', undefined, 404],
      ['GET', '/metrics', undefined, 200],
    ];
    for (const [method, path, body, status] of cases) {
      const answer = await call(method, path, body);
      expect(answer.status, `${method} ${path}`).toBe(status);
      expectCors(answer.headers, `${method} ${path}`);
      await answer.arrayBuffer();
    }
    const preflight = await call('OPTIONS', '/servers', undefined, { 'Access-Control-Request-Method': 'DELETE', 'Access-Control-Request-Headers': 'content-type, authorization' });
    expect(preflight.status).toBe(204);
    expectCors(preflight.headers, 'preflight');
    // The watch stream: headers first, then the list.
    const controller = new AbortController();
    const watch = await fetch(`${service.url}/servers?watch=1`, { headers: { Origin: ORIGIN }, signal: controller.signal });
    expect(watch.status).toBe(200);
    expectCors(watch.headers, 'watch');
    controller.abort();
  });

  it('are on the log stream\'s handshake and its refusals', async () => {
    const handshake = (path: string) => new Promise<{ status: number; headers: Record<string, string | string[] | undefined> }>((resolve, reject) => {
      const ws = new WebSocket(`${service.url.replace('http', 'ws')}${path}`, { headers: { Origin: ORIGIN } });
      ws.once('upgrade', (res) => {
        resolve({ status: 101, headers: res.headers });
        ws.terminate();
      });
      ws.once('unexpected-response', (_req, res) => {
        resolve({ status: res.statusCode!, headers: res.headers });
        res.resume();
      });
      ws.once('error', (error) => reject(error));
    });
    const all = await handshake('/ws/logs');
    expect(all.status).toBe(101);
    expect(all.headers['access-control-allow-origin']).toBe('*');
    const unknown = await handshake('/ws/logs/no-such-id');
    expect(unknown.status).toBe(404);
    expect(unknown.headers['access-control-allow-origin']).toBe('*');
  });
});
