// The service itself is killed with SIGKILL and started again: nothing is lost, doubled or orphaned.
import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseManifest } from '../../src/manifests/store.ts';
import { eventually, killEditors, portRange, processExists, request, runningEditors, STUB_EDITOR } from '../helpers/service.ts';

const MAIN = new URL('../../src/main.ts', import.meta.url).pathname;

interface Running {
  child: ChildProcess;
  url: string;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function setup() {
  const root = await fs.mkdtemp(join(tmpdir(), 'devbox-crash-'));
  const configFile = join(root, 'config.yaml');
  await fs.writeFile(configFile, stringify({ ports: portRange(), editor: { stopGraceSeconds: 2 }, controller: { resyncSeconds: 5, orphanGraceSeconds: 1 } }));
  const env = {
    ...process.env,
    DEVBOX_HOST: '127.0.0.1',
    DEVBOX_PORT: '0',
    DEVBOX_MANIFESTS_DIR: join(root, 'manifests'),
    DEVBOX_DATA_DIR: join(root, 'data'),
    DEVBOX_CONFIG: configFile,
    DEVBOX_EDITOR_BIN: STUB_EDITOR,
  };
  const children: ChildProcess[] = [];
  cleanups.push(async () => {
    for (const child of children) child.kill('SIGKILL');
    await killEditors(env.DEVBOX_DATA_DIR);
    await fs.rm(root, { recursive: true, force: true });
  });
  const start = async (): Promise<Running> => {
    const child = spawn(process.execPath, [MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let output = '';
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout!.on('data', (chunk) => {
        output += chunk;
        const match = /serving on (http:\/\/\S+)/.exec(output);
        if (match) resolve(match[1]);
      });
      child.stderr!.on('data', (chunk) => (output += chunk));
      child.once('exit', (code) => reject(new Error(`service exited with ${code}:\n${output}`)));
    });
    return { child, url };
  };
  return { root, env, start };
}

// A server still being prepared also says `stopped` (the interface's word), so its phase tells it apart.
const settled = (list: Array<{ status: string; phase: string }>) =>
  list.every((s) => (s.status === 'running' || s.status === 'stopped') && s.phase !== 'Pending' && s.phase !== 'Provisioning');

describe('a service killed with SIGKILL', () => {
  it('adopts running editors instead of restarting them', async () => {
    const { start } = await setup();
    const first = await start();
    const { id } = (await request(first.url, 'POST', '/servers', { name: 'adoptee' })).body;
    const { pid } = (await request(first.url, 'POST', `/servers/${id}/start`)).body.data;
    first.child.kill('SIGKILL');
    const second = await start();
    const record = await eventually(async () => {
      const s = (await request(second.url, 'GET', `/servers/${id}`)).body;
      return s.status === 'running' ? s : undefined;
    });
    expect(record.pid).toBe(pid);
    expect(processExists(pid)).toBe(true);
    // Asked /healthz as it was adopted: Running throughout, never Starting again (which would say
    // "started" a second time in its log once it answered).
    await eventually(async () => (await request(second.url, 'GET', `/servers/${id}`)).body.observed_generation !== null);
    const logs: string[] = (await request(second.url, 'GET', `/servers/${id}/logs?lines=200`)).body.data.logs;
    expect(logs.filter((line) => line.includes('started: code-server answers'))).toHaveLength(1);
    expect((await request(second.url, 'GET', `/servers/${id}`)).body.phase).toBe('Running');
    // Adopted editors are still fully managed: stop reaches them.
    const stopped = await request(second.url, 'POST', `/servers/${id}/stop`);
    expect(stopped.body.data).toMatchObject({ status: 'stopped', pid: null });
    expect(processExists(pid)).toBe(false);
  }, 60_000);

  it('leaves every manifest valid, every wanted editor running once, ports unshared and no orphan after 20 concurrent create+start', async () => {
    const { env, start } = await setup();
    const first = await start();
    const calls = Array.from({ length: 20 }, async (_, i) => {
      const created = await request(first.url, 'POST', '/servers', { name: `burst ${i}` });
      if (created.status === 201) await request(first.url, 'POST', `/servers/${created.body.id}/start`);
    }).map((p) => p.catch(() => undefined));
    // Kill it in the middle of the burst.
    await eventually(async () => (await fs.readdir(env.DEVBOX_MANIFESTS_DIR)).filter((f) => f.endsWith('.yaml')).length >= 8, 20_000, 5);
    first.child.kill('SIGKILL');
    await Promise.all(calls);

    const second = await start();
    // Settled means every record shows what its manifest asks for, not a status left from before the kill.
    const list = await eventually(async () => {
      const body = (await request(second.url, 'GET', '/servers')).body;
      if (!settled(body)) return undefined;
      for (const record of body as Array<{ manifest: string; status: string }>) {
        const read = parseManifest(record.manifest, await fs.readFile(join(env.DEVBOX_MANIFESTS_DIR, `${record.manifest}.yaml`), 'utf8'));
        if (read.kind === 'ok' && record.status !== (read.server.spec.running ? 'running' : 'stopped')) return undefined;
      }
      return body;
    }, 30_000, 100);

    const files = (await fs.readdir(env.DEVBOX_MANIFESTS_DIR)).filter((f) => f.endsWith('.yaml'));
    expect(files.length).toBeGreaterThanOrEqual(8);
    const manifests = await Promise.all(files.map(async (f) => parseManifest(f.slice(0, -5), await fs.readFile(join(env.DEVBOX_MANIFESTS_DIR, f), 'utf8'))));
    for (const m of manifests) expect(m.kind, JSON.stringify(m)).toBe('ok');
    expect(list.length).toBe(files.length);

    const editors = runningEditors(env.DEVBOX_DATA_DIR);
    const names = new Set(manifests.map((m) => m.name));
    for (const editor of editors) expect(names.has(editor.name), `orphan editor ${editor.name}`).toBe(true);
    for (const m of manifests) {
      if (m.kind !== 'ok') continue;
      const mine = editors.filter((e) => e.name === m.name);
      const record = list.find((s: { manifest: string }) => s.manifest === m.name);
      if (m.server.spec.running) {
        expect(mine.length, `${m.name} runs ${mine.length} times`).toBe(1);
        expect(record.status).toBe('running');
        expect(record.pid).toBe(mine[0].identity.pid);
      } else {
        expect(mine.length).toBe(0);
      }
    }
    const ports = list.map((s: { port: number }) => s.port);
    expect(new Set(ports).size).toBe(ports.length);
  }, 90_000);

  it('stops an editor whose manifest disappeared while the service was down after the grace period, keeping its files', async () => {
    const { env, start } = await setup();
    const first = await start();
    const { id, workspace_path } = (await request(first.url, 'POST', '/servers', { name: 'gone' })).body;
    const { pid } = (await request(first.url, 'POST', `/servers/${id}/start`)).body.data;
    first.child.kill('SIGKILL');
    await fs.rm(join(env.DEVBOX_MANIFESTS_DIR, 'gone.yaml'));
    await start();
    await eventually(() => !processExists(pid));
    expect(runningEditors(env.DEVBOX_DATA_DIR)).toEqual([]);
    await fs.access(workspace_path);
  }, 60_000);
});
