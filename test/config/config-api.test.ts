// GET /config, and the config file edited while the service runs: a valid edit applies without a
// restart, an invalid one is reported (GET /config, GET /health, the log) while the last good
// config keeps serving and running editors are left alone.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { eventually, portRange, processExists, startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;
let file: string;
const firstPorts = portRange();
/** A second block of ports, apart from the first. */
let secondPorts = portRange();
while (secondPorts.min === firstPorts.min) secondPorts = portRange();

/** The test's config: short timeouts, its own ports, and `more` laid over at the top level. */
function configText(more: Record<string, unknown> = {}): string {
  return '# yaml-language-server: $schema=../schemas/config.schema.json\n' + stringify({
    ports: firstPorts,
    editor: { stopGraceSeconds: 2, startTimeoutSeconds: 15 },
    controller: { resyncSeconds: 5, statsIntervalSeconds: 0.5 },
    ...more,
  });
}

/** Saves the file as many editors do: a new file renamed over the old one. */
async function save(text: string): Promise<void> {
  await fs.writeFile(`${file}.tmp`, text);
  await fs.rename(`${file}.tmp`, file);
}

const getConfig = async () => (await service.request('GET', '/config')).body;

beforeAll(async () => {
  const root = await fs.mkdtemp(join(tmpdir(), 'devbox-test-'));
  file = join(root, 'devbox.config.yaml');
  await fs.writeFile(file, configText());
  service = await startTestService({ root, configFile: file });
});
afterAll(async () => {
  await service?.stop();
});

describe('GET /config', () => {
  it('answers the four members of the configuration, and where it came from', async () => {
    const res = await service.request('GET', '/config');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('success');
    expect(Object.keys(res.body.data).sort()).toEqual(['extension_groups', 'packaged_assets', 'server', 'ui']);
    const { extension_groups, server, ui, packaged_assets } = res.body.data;
    expect(Object.keys(extension_groups)).toEqual(expect.arrayContaining(['python', 'jupyter', 'databricks', 'claude-code']));
    expect(extension_groups.python).toEqual({
      name: 'python',
      description: expect.any(String),
      extensions: ['ms-python.python', 'ms-python.debugpy', 'charliermarsh.ruff'],
      user_settings: expect.objectContaining({ 'python.terminal.activateEnvironment': true }),
    });
    expect(server).toMatchObject({
      port_range: firstPorts, start_timeout_seconds: 15, stop_grace_seconds: 2, default_restart_policy: 'Never',
      git_schemes: expect.arrayContaining(['https', 'ssh']), max_upload_mb: 100, clone_timeout_seconds: 600,
    });
    expect(ui).toEqual({ title: 'devbox-controller', default_extension_groups: ['python'], max_upload_mb: 100, archive_types: ['.zip'] });
    expect(packaged_assets).toEqual({});
    expect(res.body.source).toEqual({ file, loaded_at: expect.any(String), errors: [], pending_restart: [] });
    const health = (await service.request('GET', '/health')).body;
    expect(health.status).toBe('healthy');
    expect(health.config).toMatchObject({ file, errors: [] });
  });
});

describe('an edit of the config file', () => {
  it('applies a valid edit at once: a new group is usable by POST /servers, the next new server gets a port of the new range', async () => {
    const before = await service.request('POST', '/servers', { name: 'Before the edit' });
    expect(before.status).toBe(201);
    expect(before.body.port).toBeGreaterThanOrEqual(firstPorts.min);
    expect(before.body.port).toBeLessThanOrEqual(firstPorts.max);

    await save(configText({
      ports: secondPorts,
      extensionGroups: {
        python: { extensions: ['ms-python.python'] },
        web: { description: 'Web tools', extensions: ['esbenp.prettier-vscode'], user_settings: { 'editor.formatOnSave': true } },
      },
      ui: { title: 'Team editors', defaultExtensionGroups: ['web'] },
    }));
    await eventually(async () => (await getConfig()).data.extension_groups.web !== undefined);
    const config = await getConfig();
    expect(config.data.server.port_range).toEqual(secondPorts);
    expect(config.data.ui).toMatchObject({ title: 'Team editors', default_extension_groups: ['web'] });
    expect(config.source.errors).toEqual([]);

    const created = await service.request('POST', '/servers', { name: 'With web tools', extension_groups: ['web'] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.port).toBeGreaterThanOrEqual(secondPorts.min);
    expect(created.body.port).toBeLessThanOrEqual(secondPorts.max);
    // The reconciler installs the new group's extensions and merges its settings.
    const record = await eventually(async () => {
      const got = (await service.request('GET', `/servers/${created.body.id}`)).body;
      return got.status === 'stopped' && got;
    });
    const settings = JSON.parse(await fs.readFile(join(service.settings.dataDir, 'editors/with-web-tools/user-data/User/settings.json'), 'utf8'));
    expect(settings['editor.formatOnSave']).toBe(true);
    expect(record.id).toBe(created.body.id);
    expect((await fs.readdir(join(service.settings.dataDir, 'editors/with-web-tools/extensions'))).some((d) => d.startsWith('esbenp.prettier-vscode'))).toBe(true);
    // The server made before keeps its port.
    expect((await service.request('GET', `/servers/${before.body.id}`)).body.port).toBe(before.body.port);
    expect(service.lines.some((line) => line.includes(`config ${file} re-read`) && line.includes('extensionGroups: added web'))).toBe(true);
  });

  it.each([
    // The unclosed list is found where the file ends.
    ['a YAML syntax error', 'ports:\n  min: 9000\n  max: [9100\n', 4, /end with a \]/],
    ['a schema error', 'ports:\n  min: 80\n  max: 9100\n', 2, /^ports\.min: must be >= 1024$/],
  ])('keeps the last good config serving on %s, shows file, line and problem in GET /config and GET /health, and leaves the running editor alone', async (_what, text, line, problem) => {
    const servers = (await service.request('GET', '/servers')).body as { id: string; name: string }[];
    let running = servers.find((s) => s.name === 'Running bystander');
    if (!running) {
      const created = await service.request('POST', '/servers', { name: 'Running bystander' });
      running = created.body;
    }
    const started = await service.request('POST', `/servers/${running!.id}/start`);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const pid = started.body.data.pid;
    const good = await getConfig();

    await save(text);
    const broken = await eventually(async () => {
      const got = await getConfig();
      return got.source.errors.length > 0 && got;
    });
    expect(broken.source.errors).toEqual([{ file, line, column: expect.any(Number), problem: expect.stringMatching(problem) }]);
    // The last good config is still the one in use.
    expect(broken.data).toEqual(good.data);
    expect(broken.source.loaded_at).toBe(good.source.loaded_at);
    const health = (await service.request('GET', '/health')).body;
    expect(health.status).toBe('degraded');
    const { line: at, column, problem: said } = broken.source.errors[0];
    expect(health.config.errors).toContain(`${file}:${at}:${column}: ${said}`);
    expect(health.problems.some((p: string) => p.includes(`${file}:${at}:${column}`))).toBe(true);
    expect(service.lines).toContain(`${file}:${at}:${column}: ${said}`);
    // New servers still get the config in use.
    const meanwhile = await service.request('POST', '/servers', { name: 'Meanwhile', extension_groups: ['web'] });
    expect(meanwhile.status, JSON.stringify(meanwhile.body)).toBe(201);
    expect(meanwhile.body.port).toBeGreaterThanOrEqual(secondPorts.min);
    await service.request('DELETE', `/servers/${meanwhile.body.id}`);

    // The running editor is the same process.
    const now = (await service.request('GET', `/servers/${running!.id}`)).body;
    expect(now).toMatchObject({ status: 'running', pid });
    expect(processExists(pid)).toBe(true);

    // Fixing the file clears the error.
    await save(configText({ ports: secondPorts, extensionGroups: { web: { extensions: ['esbenp.prettier-vscode'] } }, ui: { title: 'Team editors' } }));
    await eventually(async () => (await getConfig()).source.errors.length === 0);
    expect((await service.request('GET', '/health')).body.status).toBe('healthy');
    expect((await getConfig()).data.extension_groups.python).toBeUndefined();
    expect((await service.request('GET', `/servers/${running!.id}`)).body).toMatchObject({ status: 'running', pid });
  });

  it('reports a value the running service cannot change as pending a restart', async () => {
    await save(configText({ ports: secondPorts, controller: { resyncSeconds: 5, statsIntervalSeconds: 0.5, workers: 3 } }));
    const config = await eventually(async () => {
      const got = await getConfig();
      return got.source.pending_restart.length > 0 && got;
    });
    expect(config.source.pending_restart).toEqual(['controller.workers: 8 -> 3 takes effect after a restart']);
    expect(config.source.errors).toEqual([]);
    expect(service.lines.some((line) => line.includes('controller.workers: 8 -> 3 takes effect after a restart'))).toBe(true);
    expect((await service.request('GET', '/health')).body.config.pending_restart).toEqual(config.source.pending_restart);
  });
});
