// Long work (an extension install) runs as an operation outside the queue's workers: other
// servers go on meanwhile, and a spec change or a delete cancels it and ends its process.
import { existsSync, promises as fs } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, processExists, startTestService, type TestService } from '../helpers/service.ts';

const HANGS = 'stub.hangs';
let service: TestService;

beforeAll(async () => {
  // The stub's install of this id never ends, like a stalled download.
  process.env.STUB_HANG_INSTALL_OF = HANGS;
  // One worker: a blocked worker would hold up every other server.
  service = await startTestService({ config: { controller: { workers: 1 } } });
});
afterAll(async () => {
  await service?.stop();
  delete process.env.STUB_HANG_INSTALL_OF;
});

function writeManifest(name: string, extensions: string[]): Promise<void> {
  return fs.writeFile(`${service.settings.manifestsDir}/${name}.yaml`, [
    'apiVersion: devbox.dev/v1alpha1',
    'kind: EditorServer',
    `metadata: { name: ${name} }`,
    'spec:',
    '  running: true',
    `  extensions: [${extensions.join(', ')}]`,
    '',
  ].join('\n'));
}

const byManifest = async (name: string) =>
  (await service.request('GET', '/servers')).body.find((s: { manifest: string }) => s.manifest === name);

/** The pid of the stub installer hanging for this server, once it runs (the file may be read before its pid is written in). */
const hangingInstaller = (name: string) => eventually(async () => {
  const pid = Number(await fs.readFile(`${service.settings.dataDir}/editors/${name}/extensions/hanging-install.pid`, 'utf8'));
  return pid > 0 ? pid : undefined;
});

describe('a long extension install', () => {
  it('leaves the worker free, and a spec change cancels it and ends its process', async () => {
    await writeManifest('slow', [HANGS]);
    const installer = await hangingInstaller('slow');
    expect(processExists(installer)).toBe(true);
    const installing = await eventually(async () => {
      const s = await byManifest('slow');
      return s?.reason === 'InstallingExtensions' ? s : undefined;
    });
    expect(installing.phase).toBe('Provisioning');

    // The one worker is not stuck in the install: another server starts meanwhile.
    await writeManifest('other', []);
    await eventually(async () => (await byManifest('other'))?.status === 'running');
    expect(processExists(installer)).toBe(true);

    await writeManifest('slow', ['stub.quick']);
    await eventually(() => !processExists(installer));
    const started = await eventually(async () => {
      const s = await byManifest('slow');
      return s?.status === 'running' ? s : undefined;
    });
    expect(started.extension_status).toEqual([{ id: 'stub.quick', state: 'Installed', version: '1.0.0' }]);
    const logs = (await service.request('GET', `/servers/${started.id}/logs?lines=100`)).body.data.logs.join('\n');
    expect(logs).toMatch(/install of stub\.hangs cancelled/);
  });

  it('is ended by a delete: its process is gone, and so is the server', async () => {
    await writeManifest('doomed', [HANGS]);
    const installer = await hangingInstaller('doomed');
    const { id } = await eventually(() => byManifest('doomed'));
    const deleted = await service.request('DELETE', `/servers/${id}`);
    expect(deleted.status).toBe(200);
    expect(processExists(installer)).toBe(false);
    expect(existsSync(`${service.settings.dataDir}/workspaces/doomed`)).toBe(false);
  });
});
