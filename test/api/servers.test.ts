// The lifecycle API against the real service and the stub editor.
import { existsSync, promises as fs, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { checkHealth } from '../../src/runtime/health.ts';
import { groupExists } from '../../src/core/procfs.ts';
import { eventually, processExists, startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;

beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service?.stop();
});

const create = async (name: string, extra: Record<string, unknown> = {}) => {
  const res = await service.request('POST', '/servers', { name, extensions: [], ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
};

describe('POST /servers', () => {
  it('answers 201 with the create subset and writes a manifest', async () => {
    const body = await create('Data Pipeline', { extensions: ['ms-python.python'] });
    expect(Object.keys(body).sort()).toEqual(['extensions', 'id', 'name', 'pid', 'port', 'status', 'workspace_path']);
    expect(body).toMatchObject({ name: 'Data Pipeline', status: 'stopped', pid: null, extensions: ['ms-python.python'] });
    expect(body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(body.port).toBeGreaterThanOrEqual(service.settings.config.ports.min);
    expect(existsSync(body.workspace_path)).toBe(true);
    const manifest = parse(readFileSync(`${service.settings.manifestsDir}/data-pipeline.yaml`, 'utf8'));
    expect(manifest.metadata.uid).toBe(body.id);
    expect(manifest.spec).toMatchObject({ displayName: 'Data Pipeline', running: false });
    // Status is the controller's, in its own record: the manifest holds none.
    expect(manifest.status).toBeUndefined();
    const record = parse(readFileSync(`${service.settings.dataDir}/status/data-pipeline.yaml`, 'utf8'));
    expect(record.status.extensions).toEqual([{ id: 'ms-python.python', state: 'Installed', version: '1.0.0' }]);
  });

  it('gives 20 parallel creates 20 distinct ports and manifests', async () => {
    const bodies = await Promise.all(Array.from({ length: 20 }, () => create('Parallel')));
    expect(new Set(bodies.map((b) => b.port)).size).toBe(20);
    expect(new Set(bodies.map((b) => b.id)).size).toBe(20);
    expect(new Set(bodies.map((b) => b.workspace_path)).size).toBe(20);
    await Promise.all(bodies.map((b) => service.request('DELETE', `/servers/${b.id}`)));
  });

  it('never hands the folders of an earlier server to a new one', async () => {
    await fs.mkdir(`${service.settings.dataDir}/workspaces/leftover`, { recursive: true });
    await fs.writeFile(`${service.settings.dataDir}/workspaces/leftover/notes.txt`, 'from before');
    const body = await create('Leftover');
    expect(body.workspace_path).toBe(`${service.settings.dataDir}/workspaces/leftover-2`);
    expect(await fs.readFile(`${service.settings.dataDir}/workspaces/leftover/notes.txt`, 'utf8')).toBe('from before');
    await service.request('DELETE', `/servers/${body.id}`);
  });

  it('refuses the service\'s own port with 409, saying so', async () => {
    const res = await service.request('POST', '/servers', { name: 'Greedy', port: service.port });
    expect(res.status, JSON.stringify(res.body)).toBe(409);
    expect(res.body.error.code).toBe('PORT_TAKEN');
    expect(res.body.error.message).toContain(`port ${service.port}`);
    expect(res.body.error.message).toMatch(/this service itself/);
    expect(existsSync(`${service.settings.manifestsDir}/greedy.yaml`)).toBe(false);
  });

  it('refuses malformed JSON with 400 INVALID_JSON', async () => {
    const res = await service.request('POST', '/servers', '{"name": "x",');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_JSON');
  });

  it('lists every problem of a bad body with 400', async () => {
    const res = await service.request('POST', '/servers', { name: 42, extensions: 'python', colour: 'red' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_BODY');
    const problems: string[] = res.body.error.details.problems;
    expect(problems.some((p) => p.startsWith('name'))).toBe(true);
    expect(problems.some((p) => p.startsWith('extensions'))).toBe(true);
    expect(problems.some((p) => p.includes('colour'))).toBe(true);
  });

  it.each([
    ['an array body', [1, 2]],
    ['a blank name', { name: '   ' }],
    ['an extension id that could be a command-line option', { name: 'x', extensions: ['--force'] }],
    ['a port out of range', { name: 'x', port: 80 }],
    ['an extension group the config does not define', { name: 'x', extension_groups: ['cobol'] }],
  ])('refuses %s with 400, never 500', async (_what, body) => {
    const res = await service.request('POST', '/servers', body);
    expect(res.status).toBe(400);
  });
});

describe('the server lifecycle', () => {
  it('starts, restarts, stops and deletes an editor process', async () => {
    const { id, port, workspace_path } = await create('Lifecycle');

    const started = await service.request('POST', `/servers/${id}/start`);
    expect(started.status).toBe(200);
    expect(started.body).toMatchObject({ status: 'success', data: { id, status: 'running' } });
    expect(started.body.message).toMatch(/started/);
    const pid = started.body.data.pid;
    expect(processExists(pid)).toBe(true);
    expect((await checkHealth(port, 10_000)).ok).toBe(true);

    const restarted = await service.request('POST', `/servers/${id}/restart`);
    expect(restarted.status).toBe(200);
    expect(restarted.body.data.status).toBe('running');
    expect(restarted.body.data.pid).not.toBe(pid);
    expect(restarted.body.message).toMatch(/restarted/);
    expect(processExists(pid)).toBe(false);
    const newPid = restarted.body.data.pid;

    const stopped = await service.request('POST', `/servers/${id}/stop`);
    expect(stopped.status).toBe(200);
    expect(stopped.body).toMatchObject({ status: 'success', data: { id, status: 'stopped', pid: null } });
    expect(stopped.body.message).toMatch(/stopped/);
    expect(processExists(newPid)).toBe(false);
    expect(groupExists(newPid)).toBe(false);
    expect((await checkHealth(port)).ok).toBe(false);

    const deleted = await service.request('DELETE', `/servers/${id}`);
    expect(deleted.status).toBe(200);
    expect(existsSync(`${service.settings.manifestsDir}/lifecycle.yaml`)).toBe(false);
    expect(existsSync(workspace_path)).toBe(false);
    expect((await service.request('GET', `/servers/${id}`)).status).toBe(404);
  });

  it('stops the whole process group, children included', async () => {
    const { id } = await create('Family');
    process.env.STUB_CHILD = '1';
    const started = await service.request('POST', `/servers/${id}/start`).finally(() => delete process.env.STUB_CHILD);
    const pid = started.body.data.pid;
    await eventually(() => readFileSync('/proc/' + pid + '/task/' + pid + '/children', 'utf8').trim() !== '');
    await service.request('POST', `/servers/${id}/stop`);
    expect(groupExists(pid)).toBe(false);
    await service.request('DELETE', `/servers/${id}`);
  });

  it('lists servers with every field of the record', async () => {
    const { id } = await create('Listed');
    await service.request('POST', `/servers/${id}/start`);
    const list = await service.request('GET', '/servers');
    expect(list.status).toBe(200);
    const record = list.body.find((s: { id: string }) => s.id === id);
    for (const field of ['id', 'name', 'port', 'workspace_path', 'extensions', 'status', 'pid', 'start_time', 'uptime', 'cpu_percent', 'memory_mb']) {
      expect(record, field).toHaveProperty(field);
    }
    expect(record.status).toBe('running');
    expect(typeof record.pid).toBe('number');
    expect(new Date(record.start_time).toISOString()).toBe(record.start_time);
    await eventually(async () => (await service.request('GET', `/servers/${id}`)).body.memory_mb > 0, 5000);
    await service.request('DELETE', `/servers/${id}`);
  });

  it('reports health and corrects status when the editor was killed behind its back', async () => {
    const { id } = await create('Refreshed');
    const started = await service.request('POST', `/servers/${id}/start`);
    const health = await service.request('GET', `/servers/${id}/health`);
    expect(health.body).toMatchObject({ status: 'success', data: { status: 'running', http_healthy: true, process_exists: true } });
    for (const field of ['cpu_percent', 'memory_mb', 'uptime_seconds']) expect(typeof health.body.data[field]).toBe('number');

    const same = await service.request('POST', `/servers/${id}/refresh-status`);
    expect(same.body).toMatchObject({ status: 'success', id, old_status: 'running', new_status: 'running', updated: false });
    expect(typeof same.body.pid_status).toBe('string');
    expect(typeof same.body.healthz_status).toBe('string');

    process.kill(started.body.data.pid, 'SIGKILL');
    await eventually(() => !processExists(started.body.data.pid));
    const all = await service.request('POST', '/servers/refresh-all');
    expect(all.body.status).toBe('success');
    expect(all.body.total_servers).toBeGreaterThanOrEqual(1);
    const mine = all.body.servers.find((s: { id: string }) => s.id === id);
    expect(mine.new_status).toBe('failed');
    expect(typeof all.body.message).toBe('string');
    expect((await service.request('GET', `/servers/${id}`)).body).toMatchObject({ status: 'failed', pid: null });

    // Start again after the crash.
    const again = await service.request('POST', `/servers/${id}/start`);
    expect(again.status).toBe(200);
    expect(again.body.data.status).toBe('running');
    await service.request('DELETE', `/servers/${id}`);
  });
});

describe('refreshing a live editor that stopped answering', () => {
  it('reports it failed (Unhealthy) while /healthz is silent, and running again once it answers', async () => {
    const { id } = await create('Frozen');
    const { pid } = (await service.request('POST', `/servers/${id}/start`)).body.data;
    process.kill(pid, 'SIGSTOP');
    try {
      const frozen = (await service.request('POST', `/servers/${id}/refresh-status`)).body;
      expect(frozen).toMatchObject({ old_status: 'running', new_status: 'failed', updated: true });
      expect(frozen.pid_status).toContain('is running');
      expect(frozen.healthz_status).toContain('did not answer');
      expect((await service.request('GET', `/servers/${id}`)).body).toMatchObject({ reason: 'Unhealthy', pid });
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    const thawed = (await service.request('POST', `/servers/${id}/refresh-status`)).body;
    expect(thawed).toMatchObject({ old_status: 'failed', new_status: 'running', updated: true });
    await service.request('DELETE', `/servers/${id}`);
  });
});

describe('errors and CORS', () => {
  const unknown = '00000000-0000-4000-8000-000000000000';
  it.each([
    ['GET', ''], ['POST', '/start'], ['POST', '/stop'], ['POST', '/restart'], ['DELETE', ''],
    ['GET', '/health'], ['POST', '/refresh-status'],
  ])('answers 404 for an unknown id on %s /servers/{id}%s', async (method, suffix) => {
    for (const id of [unknown, 'not-a-uuid']) {
      const res = await service.request(method, `/servers/${id}${suffix}`);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('SERVER_NOT_FOUND');
    }
  });

  it('allows every origin and answers preflights', async () => {
    const res = await fetch(`${service.url}/servers`, {
      method: 'OPTIONS',
      headers: { origin: 'https://example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-methods')).toBe('GET, POST, PUT, DELETE, OPTIONS');
    expect(res.headers.get('access-control-allow-headers')).toBe('Content-Type, Authorization');
    const get = await service.request('GET', '/servers');
    expect(get.headers.get('access-control-allow-origin')).toBe('*');
    const missing = await service.request('GET', '/servers/nope');
    expect(missing.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('answers GET /health', async () => {
    const res = await service.request('GET', '/health');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('healthy');
    expect(res.body.version).toBe(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version);
    expect(res.body.servers).toBe((await service.request('GET', '/servers')).body.length);
    // The service's own memory, as process.memoryUsage() sees this very process.
    const { rss, heap_used, heap_total } = res.body.memory_mb;
    expect(rss).toBeGreaterThan(heap_used);
    expect(heap_total).toBeGreaterThanOrEqual(heap_used);
    expect(Math.abs(rss - process.memoryUsage().rss / 1024 / 1024)).toBeLessThan(50);
  });
});
