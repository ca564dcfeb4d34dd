// Operators write, edit and delete manifests by hand; the controller follows without API calls.
import { existsSync, promises as fs } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { checkHealth } from '../../src/runtime/health.ts';
import { eventually, processExists, startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;

beforeAll(async () => {
  service = await startTestService({
    // A removed file stops its editor after 1 s here (30 s by default).
    config: { editor: { readyTimeoutSeconds: 15, crashLoopRestarts: 3 }, controller: { orphanGraceSeconds: 1 } },
  });
});
afterAll(async () => {
  await service?.stop();
});

const file = (name: string) => `${service.settings.manifestsDir}/${name}.yaml`;
const statusFile = (name: string) => `${service.settings.dataDir}/status/${name}.yaml`;
const byManifest = async (name: string) =>
  (await service.request('GET', '/servers')).body.find((s: { manifest: string }) => s.manifest === name);

describe('manifests written by hand', () => {
  it('becomes a running server without any API call, and stops when the file is deleted, keeping its files', async () => {
    const written = [
      '# Written by an operator.',
      'apiVersion: devbox.dev/v1alpha1',
      'kind: EditorServer',
      'metadata:',
      '  name: handmade   # = the file name',
      'spec:',
      '  displayName: Hand made',
      '  running: true',
      '',
    ].join('\n');
    await fs.writeFile(file('handmade'), written);
    const record = await eventually(async () => {
      const s = await byManifest('handmade');
      return s?.status === 'running' ? s : undefined;
    });
    expect(record.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(processExists(record.pid)).toBe(true);
    expect((await checkHealth(record.port, 10_000)).ok).toBe(true);
    // The operator's file stays theirs: uid and status are kept in the data folder.
    expect(await fs.readFile(file('handmade'), 'utf8')).toBe(written);
    const kept = parse(await fs.readFile(statusFile('handmade'), 'utf8'));
    expect(kept.uid).toBe(record.id);
    expect(kept.status.phase).toBe('Running');

    await fs.rm(file('handmade'));
    await eventually(async () => (await byManifest('handmade')) === undefined);
    expect(processExists(record.pid)).toBe(false);
    // Removing a file is not a request to delete anybody's work.
    expect(existsSync(record.workspace_path)).toBe(true);
  });

  it('stops the editor when running is set to false by hand', async () => {
    const { id } = (await service.request('POST', '/servers', { name: 'edited' })).body;
    const { pid } = (await service.request('POST', `/servers/${id}/start`)).body.data;
    const text = await fs.readFile(file('edited'), 'utf8');
    await fs.writeFile(file('edited'), text.replace('running: true', 'running: false'));
    await eventually(async () => (await service.request('GET', `/servers/${id}`)).body.status === 'stopped');
    expect(processExists(pid)).toBe(false);
    await service.request('DELETE', `/servers/${id}`);
  });

  it('leaves the editor alone when its manifest becomes invalid, and shows every problem', async () => {
    const { id } = (await service.request('POST', '/servers', { name: 'broken' })).body;
    const { pid } = (await service.request('POST', `/servers/${id}/start`)).body.data;
    const good = await fs.readFile(file('broken'), 'utf8');
    await fs.writeFile(file('broken'), good.replace('running: true', 'running: maybe\n  colour: red'));
    const entry = await eventually(async () => {
      const list = (await service.request('GET', '/manifests')).body;
      return list.find((m: { name: string; valid: boolean }) => m.name === 'broken' && !m.valid);
    });
    expect(entry.file).toBe(file('broken'));
    expect(entry.errors.some((e: string) => e.includes('spec.running'))).toBe(true);
    expect(entry.errors.some((e: string) => e.includes('colour'))).toBe(true);
    expect(service.lines.some((l) => l.includes(file('broken')) && l.includes('colour'))).toBe(true);
    expect(processExists(pid)).toBe(true);
    expect((await service.request('GET', `/servers/${id}`)).body.manifest_errors.length).toBeGreaterThan(0);

    await fs.writeFile(file('broken'), 'apiVersion: [unclosed');
    await eventually(async () => {
      const list = (await service.request('GET', '/manifests')).body;
      return list.find((m: { name: string; errors: string[] }) => m.name === 'broken' && m.errors.some((e) => /flow|collection|unexpected|end/i.test(e)));
    });
    expect(processExists(pid)).toBe(true);

    await fs.writeFile(file('broken'), good);
    await eventually(async () => (await service.request('GET', `/servers/${id}`)).body.manifest_errors === undefined);
    expect((await service.request('GET', `/servers/${id}`)).body.pid).toBe(pid);
    await service.request('DELETE', `/servers/${id}`);
  });
});

/** Writes a manifest whole, as an editor's save does: the controller never sees half of it. */
async function writeWhole(name: string, lines: string[]): Promise<void> {
  const temp = `${service.settings.manifestsDir}/.${name}.partial`;
  await fs.writeFile(temp, lines.join('\n'));
  await fs.rename(temp, file(name));
}

describe('the service\'s own port', () => {
  it('is never an editor\'s: a spec.port naming it fails with a clear reason', async () => {
    await writeWhole('own-port', [
      'apiVersion: devbox.dev/v1alpha1',
      'kind: EditorServer',
      'metadata:',
      '  name: own-port',
      'spec:',
      '  running: true',
      `  port: ${service.port}`,
      '',
    ]);
    try {
      const record = await eventually(async () => {
        const s = await byManifest('own-port');
        return s?.status === 'failed' ? s : undefined;
      });
      expect(record.reason).toBe('PortUnavailable');
      expect(record.message).toContain(`spec.port ${service.port}`);
      expect(record.message).toMatch(/this service itself/);
      expect(record.message).not.toMatch(/does not manage/);
      expect(record.pid).toBeNull();
    } finally {
      await fs.rm(file('own-port'), { force: true });
      await eventually(async () => (await byManifest('own-port')) === undefined);
    }
  });

  it('is never given out: a status.port that is the service\'s own is replaced by a free one', async () => {
    await writeWhole('recorded-own', [
      'apiVersion: devbox.dev/v1alpha1',
      'kind: EditorServer',
      'metadata:',
      '  name: recorded-own',
      'spec:',
      '  running: true',
      'status:',
      '  phase: Stopped',
      `  port: ${service.port}`,
      '',
    ]);
    try {
      const record = await eventually(async () => {
        const s = await byManifest('recorded-own');
        return s?.status === 'running' ? s : undefined;
      });
      expect(record.port).not.toBe(service.port);
      expect(record.port).toBeGreaterThanOrEqual(service.settings.config.ports.min);
      const logs: string[] = (await service.request('GET', `/servers/${record.id}/logs?lines=1000`)).body.data.logs;
      expect(logs.join('\n')).not.toMatch(/does not manage/);
    } finally {
      await fs.rm(file('recorded-own'), { force: true });
      await eventually(async () => (await byManifest('recorded-own')) === undefined);
    }
  });
});

describe('editor crashes', () => {
  it('shows a kill -9 of an editor in status within 2 seconds', async () => {
    const { id } = (await service.request('POST', '/servers', { name: 'killed' })).body;
    const { pid } = (await service.request('POST', `/servers/${id}/start`)).body.data;
    process.kill(pid, 'SIGKILL');
    const killedAt = Date.now();
    await eventually(async () => (await service.request('GET', `/servers/${id}`)).body.status === 'failed', 2000, 20);
    expect(Date.now() - killedAt).toBeLessThan(2000);
    const record = (await service.request('GET', `/servers/${id}`)).body;
    expect(record).toMatchObject({ pid: null, reason: 'Crashed' });
    expect(record.message).toContain('SIGKILL');
    await service.request('DELETE', `/servers/${id}`);
  });

  it('restarts a crashed editor under restartPolicy OnFailure and reports a crash loop as Failed', async () => {
    process.env.STUB_CRASH_AFTER_MS = '150';
    try {
      const { id } = (await service.request('POST', '/servers', { name: 'crashy', restart_policy: 'OnFailure' })).body;
      await service.request('POST', `/servers/${id}/start`);
      const looping = await eventually(async () => {
        const s = (await service.request('GET', `/servers/${id}`)).body;
        return s.reason === 'CrashLoopBackOff' ? s : undefined;
      }, 15_000, 100);
      expect(looping.status).toBe('failed');
      expect(looping.message).toMatch(/crashes/);
      const status = parse(await fs.readFile(statusFile('crashy'), 'utf8')).status;
      expect(status.restarts).toBeGreaterThanOrEqual(2);
      await service.request('DELETE', `/servers/${id}`);
    } finally {
      delete process.env.STUB_CRASH_AFTER_MS;
    }
  }, 40_000);
});
