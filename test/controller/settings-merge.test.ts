// The groups' user_settings and spec.settings merged into the editor's User/settings.json, with
// the real service and the stub editor: keys the user changed in the editor survive a restart
// of the service and of the editor; keys whose desired value changes are updated.
import { promises as fs, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { parseJsonc } from '../../src/extensions/user-settings.ts';
import { startService, type Service } from '../../src/service.ts';
import { eventually, killEditors, makeSettings, request } from '../helpers/service.ts';
import type { Settings } from '../../src/config/settings.ts';

const services: Service[] = [];
let root: string | undefined;

afterEach(async () => {
  for (const service of services.splice(0)) await service.close({ stopEditors: true });
  if (root) {
    await killEditors(join(root, 'data'));
    await fs.rm(root, { recursive: true, force: true });
    root = undefined;
  }
});

async function start(settings: Settings): Promise<Service> {
  const service = await startService(settings, () => {});
  services.push(service);
  return service;
}

const call = (service: Service, method: string, path: string, body?: unknown) => request(service.url, method, path, body);

it('keeps what the user changed inside the editor across restarts of the service and the editor', async () => {
  const settings = await makeSettings({
    config: {
      extensionGroups: {
        py: { name: 'py', description: '', extensions: ['acme.py'], user_settings: { 'editor.tabSize': 4, 'py.lint': true } },
      },
    },
  });
  root = join(settings.manifestsDir, '..');
  let service = await start(settings);
  const created = await call(service, 'POST', '/servers', { name: 'Tuned', extension_groups: ['py'], settings: { 'editor.fontSize': 14 } });
  expect(created.status).toBe(201);
  const file = join(settings.dataDir, 'editors', 'tuned', 'user-data', 'User', 'settings.json');
  const read = () => JSON.parse(readFileSync(file, 'utf8'));
  expect(read()).toEqual({ 'editor.tabSize': 4, 'py.lint': true, 'editor.fontSize': 14 });
  expect((await call(service, 'POST', `/servers/${created.body.id}/start`)).status).toBe(200);

  // The user changes a setting and adds one, the way VS Code keeps the file: comments, trailing commas.
  await fs.writeFile(file, [
    '{',
    '  // bigger, please',
    '  "editor.fontSize": 20,',
    '  "editor.tabSize": 4,',
    '  "py.lint": true,',
    '  "workbench.colorTheme": "Solarized // Dark", /* mine */',
    '}',
  ].join('\n'));
  const mine = { 'editor.fontSize': 20, 'editor.tabSize': 4, 'py.lint': true, 'workbench.colorTheme': 'Solarized // Dark' };

  // The service restarts (the editor runs on and is adopted), then the editor restarts.
  await service.close();
  services.splice(services.indexOf(service), 1);
  service = await start(settings);
  const restarted = await call(service, 'POST', `/servers/${created.body.id}/restart`);
  expect(restarted.status, JSON.stringify(restarted.body)).toBe(200);
  const unchangedText = readFileSync(file, 'utf8');
  expect(unchangedText).toContain('// bigger, please'); // not even rewritten
  expect(parseJsonc(unchangedText)).toEqual(mine);

  // The spec changes one key and drops the group: that key follows the spec; the group's keys
  // the user left as written go, the user's own stay.
  const manifestFile = join(settings.manifestsDir, 'tuned.yaml');
  const manifest = parse(readFileSync(manifestFile, 'utf8'));
  manifest.spec.settings = { 'editor.fontSize': 16 };
  delete manifest.spec.extensionGroups;
  await fs.writeFile(manifestFile, stringify(manifest));
  await eventually(() => read()['editor.fontSize'] === 16);
  expect(read()).toEqual({ 'editor.fontSize': 16, 'workbench.colorTheme': 'Solarized // Dark' });
}, 60_000);
