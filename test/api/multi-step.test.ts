// The multi-step creation routes against the real service and the stub editor, which "installs"
// an extension by making its folder (<id>-1.0.0) in the server's extensions folder.
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { processExists, startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;

beforeAll(async () => {
  service = await startTestService({
    config: {
      extensionGroups: {
        data: { name: 'data', description: 'data tools', extensions: ['acme.csv', 'acme.sql'], user_settings: { 'csv.rows': 100 } },
      },
    },
  });
});
afterAll(async () => {
  await service?.stop();
});

const manifestOf = (name: string) => parse(readFileSync(`${service.settings.manifestsDir}/${name}.yaml`, 'utf8'));
const installed = (name: string, id: string) => existsSync(`${service.settings.dataDir}/editors/${name}/extensions/${id}-1.0.0/package.json`);

describe('the multi-step creation', () => {
  it('creates metadata, installs extensions one by one and by group, then starts a working editor', async () => {
    const created = await service.request('POST', '/servers/create-metadata', { name: 'Step by step' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ name: 'Step by step', extensions: [], status: 'stopped', pid: null });
    const { id } = created.body;

    const one = await service.request('POST', `/servers/${id}/install-extension`, { extension: 'acme.lint' });
    expect(one.status, JSON.stringify(one.body)).toBe(200);
    expect(one.body).toMatchObject({ status: 'success', data: { id, status: 'stopped' } });
    expect(one.body.results).toEqual([{ id: 'acme.lint', state: 'Installed', version: '1.0.0' }]);
    expect(installed('step-by-step', 'acme.lint')).toBe(true);

    const many = await service.request('POST', `/servers/${id}/install-extensions`, { extensions: ['acme.fmt', 'acme.lint'] });
    expect(many.status, JSON.stringify(many.body)).toBe(200);
    expect(many.body.results.map((r: { id: string; state: string }) => [r.id, r.state])).toEqual([['acme.fmt', 'Installed'], ['acme.lint', 'Installed']]);
    expect(manifestOf('step-by-step').spec.extensions).toEqual(['acme.lint', 'acme.fmt']);

    const group = await service.request('POST', `/servers/${id}/apply-group-settings`, { group_name: 'data' });
    expect(group.status, JSON.stringify(group.body)).toBe(200);
    expect(group.body.results.map((r: { id: string }) => r.id)).toEqual(['acme.csv', 'acme.sql']);
    expect(installed('step-by-step', 'acme.sql')).toBe(true);
    expect(manifestOf('step-by-step').spec.extensionGroups).toEqual(['data']);
    const settingsFile = `${service.settings.dataDir}/editors/step-by-step/user-data/User/settings.json`;
    expect(JSON.parse(readFileSync(settingsFile, 'utf8'))).toEqual({ 'csv.rows': 100 });
    // groupName works as well, and applying a group twice lists it once.
    const again = await service.request('POST', `/servers/${id}/apply-group-settings`, { groupName: 'data' });
    expect(again.status).toBe(200);
    expect(manifestOf('step-by-step').spec.extensionGroups).toEqual(['data']);

    const started = await service.request('POST', `/servers/${id}/start`);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(processExists(started.body.data.pid)).toBe(true);
  });

  it('refuses unknown groups and ids that are not publisher.name (option-shaped ones included) with 400', async () => {
    const { body: { id } } = await service.request('POST', '/servers/create-metadata', { name: 'Refusals' });
    const before = readFileSync(`${service.settings.manifestsDir}/refusals.yaml`, 'utf8');
    const cases: Array<[string, unknown]> = [
      ['apply-group-settings', { groupName: 'nope' }],
      ['apply-group-settings', {}],
      ['install-extension', { extension: '--help' }],
      ['install-extension', { extension: 'no-dot' }],
      ['install-extensions', { extensions: ['ok.one', '--install-extension=x.y'] }],
      ['install-extensions', { extensions: [] }],
    ];
    for (const [route, body] of cases) {
      const res = await service.request('POST', `/servers/${id}/${route}`, body);
      expect(res.status, `${route} ${JSON.stringify(body)}`).toBe(400);
      expect(res.body.error.code).toBe('INVALID_BODY');
    }
    const unknown = await service.request('POST', `/servers/${id}/apply-group-settings`, { groupName: 'nope' });
    expect(unknown.body.error.message).toContain('the config defines data');
    expect(readFileSync(`${service.settings.manifestsDir}/refusals.yaml`, 'utf8')).toBe(before);
    expect((await service.request('POST', '/servers/create-metadata', { name: 'x', extensions: [] })).status).toBe(400);
  });

  it('answers 404 for an unknown id', async () => {
    const res = await service.request('POST', '/servers/00000000-0000-0000-0000-000000000000/install-extension', { extension: 'a.b' });
    expect(res.status).toBe(404);
  });
});

describe('POST /servers with extensions', () => {
  it('answers 201 before a long install finishes; its progress shows in status and the log', async () => {
    process.env.STUB_HANG_INSTALL_OF = 'acme.slow';
    try {
      const started = Date.now();
      const created = await service.request('POST', '/servers', { name: 'Slow', extensions: ['acme.quick', 'acme.slow'] });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(Date.now() - started).toBeLessThan(8_000);
      // The interface's word for a created server is `stopped`; the progress is in phase, reason and message.
      expect(created.body).toMatchObject({ status: 'stopped', pid: null, extensions: ['acme.quick', 'acme.slow'] });
      const record = (await service.request('GET', `/servers/${created.body.id}`)).body;
      expect(record).toMatchObject({ status: 'stopped', phase: 'Provisioning', reason: 'InstallingExtensions', message: 'installing acme.slow (2 of 2)' });
      expect(record.extension_status).toEqual([{ id: 'acme.quick', state: 'Installed', version: '1.0.0' }]);
      const logs = (await service.request('GET', `/servers/${created.body.id}/logs?lines=20`)).body.data.logs.join('\n');
      expect(logs).toContain('installing extension acme.slow');
      // Deleting it ends the hanging installer.
      expect([200, 202]).toContain((await service.request('DELETE', `/servers/${created.body.id}`)).status);
    } finally {
      delete process.env.STUB_HANG_INSTALL_OF;
    }
  }, 30_000);
});
