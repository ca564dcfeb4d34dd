// Settings from the environment and the config file.
import { promises as fs, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, loadSettings, SettingsError } from '../../src/config/settings.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await fs.rm(dir, { recursive: true, force: true });
});

async function configFile(text: string): Promise<string> {
  const dir = await fs.mkdtemp(join(tmpdir(), 'devbox-config-'));
  dirs.push(dir);
  const file = join(dir, 'config.yaml');
  await fs.writeFile(file, text);
  return file;
}

describe('the config file', () => {
  it.each([
    ['min below 1024', 'ports: { min: 80, max: 9000 }', 'ports.min'],
    ['max above 65535', 'ports: { min: 8010, max: 70000 }', 'ports.max'],
    ['min 0', 'ports: { min: 0, max: 100 }', 'ports.min'],
  ])('refuses editor ports outside 1024-65535 (%s)', async (_what, text, where) => {
    const file = await configFile(text);
    expect(() => loadConfig(file)).toThrow(SettingsError);
    expect(() => loadConfig(file)).toThrow(where);
  });

  it('accepts the whole range 1024-65535', async () => {
    expect(loadConfig(await configFile('ports: { min: 1024, max: 65535 }')).ports).toEqual({ min: 1024, max: 65535 });
  });
});

describe('the service port', () => {
  it('remembers which variable it came from, for the messages that name it', () => {
    expect(loadSettings({ DEVBOX_PORT: '9000' })).toMatchObject({ port: 9000, portVariable: 'DEVBOX_PORT' });
    expect(loadSettings({ DATABRICKS_APP_PORT: '9001' })).toMatchObject({ port: 9001, portVariable: 'DATABRICKS_APP_PORT', host: '0.0.0.0' });
    expect(loadSettings({ DEVBOX_PORT: '9000', DATABRICKS_APP_PORT: '9001' })).toMatchObject({ port: 9000, portVariable: 'DEVBOX_PORT' });
    const defaults = loadSettings({});
    expect(defaults.port).toBe(8000);
    expect(defaults.portVariable).toBeUndefined();
    expect(() => loadSettings({ DATABRICKS_APP_PORT: 'x' })).toThrow('DATABRICKS_APP_PORT="x"');
  });
});

describe('DEVBOX_ALLOWED_HOSTS', () => {
  it('lists host names, IP addresses and domains, lower case', () => {
    expect(loadSettings({}).allowedHosts).toEqual([]);
    expect(loadSettings({ DEVBOX_ALLOWED_HOSTS: ' Devbox.Example , .corp.example,10.0.0.5,[fd00::1], devbox.example.' }).allowedHosts)
      .toEqual(['devbox.example', '.corp.example', '10.0.0.5', 'fd00::1', 'devbox.example']);
  });

  it.each(['http://devbox.example', 'devbox.example:8000', 'a b', '*.example.com'])('refuses "%s", saying how to write it', (value) => {
    expect(() => loadSettings({ DEVBOX_ALLOWED_HOSTS: value })).toThrow(SettingsError);
    expect(() => loadSettings({ DEVBOX_ALLOWED_HOSTS: value })).toThrow(/DEVBOX_ALLOWED_HOSTS: .* without scheme or port/);
  });
});

describe('extension groups', () => {
  it('are objects, and a bare list of ids (the older form) still reads as a group without settings', async () => {
    const config = loadConfig(await configFile([
      'extensionGroups:',
      '  web: { description: Web tools, extensions: [esbenp.prettier-vscode], user_settings: { editor.formatOnSave: true } }',
      '  old: [a.b, c.d]',
    ].join('\n')));
    expect(config.extensionGroups).toEqual({
      web: { name: 'web', description: 'Web tools', extensions: ['esbenp.prettier-vscode'], user_settings: { 'editor.formatOnSave': true } },
      old: { name: 'old', description: '', extensions: ['a.b', 'c.d'], user_settings: {} },
    });
  });

  it('refuses a group whose name differs from its key, or without extensions, saying what to change', async () => {
    expect(() => loadConfig(configFileSync('extensionGroups: { web: { name: other, extensions: [] } }'))).toThrow('make it "web"');
    expect(() => loadConfig(configFileSync('extensionGroups: { web: { description: x } }'))).toThrow('extensions');
  });

  it('default to python, jupyter, databricks, claude-code and git, each with extensions', () => {
    const groups = loadConfig(undefined).extensionGroups;
    expect(Object.keys(groups)).toEqual(expect.arrayContaining(['python', 'jupyter', 'databricks', 'claude-code']));
    for (const group of Object.values(groups)) expect(group.extensions.length).toBeGreaterThan(0);
  });
});

function configFileSync(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'devbox-config-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'config.yaml'), text);
  return join(dir, 'config.yaml');
}

describe('an invalid config file at start-up', () => {
  it('is refused with every problem, each as file:line:column: problem', async () => {
    const file = await configFile(['ports:', '  min: 80', '  max: 9000', 'editor:', '  stopGraceSeconds: -1', '  colour: blue', ''].join('\n'));
    let message = '';
    try {
      loadConfig(file);
    } catch (error) {
      expect(error).toBeInstanceOf(SettingsError);
      message = (error as Error).message;
    }
    expect(message.split('\n').slice(1).map((line) => line.trim())).toEqual([
      `${file}:2:8: ports.min: must be >= 1024`,
      `${file}:6:3: editor: unknown field "colour"`,
      `${file}:5:21: editor.stopGraceSeconds: must be >= 0`,
    ]);
  });

  it('may name its schema with "$schema", as JSON files do', async () => {
    const file = await configFile('{"$schema": "./schemas/config.schema.json", "ports": {"min": 9000, "max": 9001}}');
    expect(loadConfig(file)).toEqual({ ...loadConfig(undefined), ports: { min: 9000, max: 9001 } });
  });
});
