// Extensions follow the manifest with the real service and the stub editor: an id removed by
// hand is uninstalled (its folder goes), the others stay, and status lists what the spec names.
import { existsSync, promises as fs, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse } from 'yaml';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service?.stop();
});

const write = (extensions: string[]) => fs.writeFile(join(service.settings.manifestsDir, 'follow.yaml'), [
  'apiVersion: devbox.dev/v1alpha1', 'kind: EditorServer', 'metadata: { name: follow }',
  'spec:', '  running: false', `  extensions: [${extensions.join(', ')}]`, '',
].join('\n'));
const statusOf = () => {
  try {
    return parse(readFileSync(join(service.settings.dataDir, 'status', 'follow.yaml'), 'utf8')).status;
  } catch {
    return undefined;
  }
};
const folder = (id: string) => join(service.settings.dataDir, 'editors', 'follow', 'extensions', `${id}-1.0.0`);

it('uninstalls an extension removed from the manifest by hand, and installs again one whose folder went', async () => {
  await write(['acme.keep', 'acme.drop']);
  await eventually(() => statusOf()?.phase === 'Stopped' && statusOf()?.extensions?.length === 2);
  expect(existsSync(folder('acme.drop'))).toBe(true);

  await write(['acme.keep']);
  await eventually(() => statusOf()?.extensions?.length === 1 && !existsSync(folder('acme.drop')));
  expect(statusOf().extensions).toEqual([{ id: 'acme.keep', state: 'Installed', version: '1.0.0' }]);
  expect(existsSync(folder('acme.keep'))).toBe(true);
  const { id } = (await service.request('GET', '/servers')).body.find((r: { manifest: string }) => r.manifest === 'follow');
  const logs = (await service.request('GET', `/servers/${id}/logs?lines=50`)).body.data.logs.join('\n');
  expect(logs).toContain('extension acme.drop uninstalled');

  // Level-triggered: the folder, not status, says what is there. A stopped server costs nothing
  // until something happens to it; its next reconcile (here the start) puts the folder back.
  await fs.rm(folder('acme.keep'), { recursive: true });
  expect((await service.request('POST', `/servers/${id}/start`)).status).toBe(200);
  await eventually(() => existsSync(folder('acme.keep')) && statusOf()?.phase === 'Running', 15_000);
});
