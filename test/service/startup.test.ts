// Start-up refusals: a busy port and a manifests folder another service already serves stop the
// service with exit code 2 and one line, before it touches any manifest or editor.
import { spawn } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { LOCK_FILE } from '../../src/manifests/lock.ts';
import { readStat } from '../../src/core/procfs.ts';
import { StartupError, startService } from '../../src/service.ts';
import { killEditors, makeSettings, portRange, runningEditors, startTestService, STUB_EDITOR, type TestService } from '../helpers/service.ts';

const MAIN = new URL('../../src/main.ts', import.meta.url).pathname;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tempRoot(): Promise<string> {
  const root = await fs.mkdtemp(join(tmpdir(), 'devbox-startup-'));
  cleanups.push(async () => {
    await killEditors(join(root, 'data'));
    await fs.rm(root, { recursive: true, force: true });
  });
  return root;
}

/** A port some other program listens on. */
async function occupiedPort(): Promise<number> {
  const server: Server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
  return (server.address() as { port: number }).port;
}

/** Runs `node src/main.ts` (with npm start's flags) until it exits or serves. */
function runMain(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--disable-warning=DEP0060', MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => {
    stdout += chunk;
    // A service that starts serving was not refused: stop it, the test fails on the exit code.
    if (/serving on/.test(stdout)) child.kill('SIGKILL');
  });
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

function serviceEnv(root: string, extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DEVBOX_HOST: '127.0.0.1',
    DEVBOX_MANIFESTS_DIR: join(root, 'manifests'),
    DEVBOX_DATA_DIR: join(root, 'data'),
    DEVBOX_CONFIG: join(root, 'config.yaml'),
    DEVBOX_EDITOR_BIN: STUB_EDITOR,
    ...extra,
  };
  for (const key of ['DEVBOX_PORT', 'DATABRICKS_APP_PORT', 'DEVBOX_REQUIRE_IDENTITY']) if (!(key in extra)) delete env[key];
  return env;
}

const MANIFEST = [
  '# An editor that wants to run: a service that starts must not touch it before it serves.',
  'apiVersion: devbox.dev/v1alpha1',
  'kind: EditorServer',
  'metadata:',
  '  name: wanted',
  'spec:',
  '  running: true',
  '',
].join('\n');

async function folderWithManifest(): Promise<{ root: string; manifest: string; bytes: Buffer }> {
  const root = await tempRoot();
  await fs.mkdir(join(root, 'manifests'));
  await fs.writeFile(join(root, 'config.yaml'), stringify({ ports: portRange() }));
  const manifest = join(root, 'manifests', 'wanted.yaml');
  await fs.writeFile(manifest, MANIFEST);
  return { root, manifest, bytes: await fs.readFile(manifest) };
}

function oneLine(stderr: string): string {
  const lines = stderr.trimEnd().split('\n');
  expect(lines, stderr).toHaveLength(1);
  expect(stderr).not.toContain('    at ');
  return lines[0];
}

describe('a busy port', () => {
  it.each([
    ['DEVBOX_PORT', 'DEVBOX_PORT'],
    ['DATABRICKS_APP_PORT', 'DATABRICKS_APP_PORT'],
  ])('is exit code 2 and one line naming %s, with nothing adopted, started or written', async (variable, named) => {
    const { root, manifest, bytes } = await folderWithManifest();
    const port = await occupiedPort();
    const result = await runMain(serviceEnv(root, { [variable]: String(port) }));
    expect(result.code, result.stdout + result.stderr).toBe(2);
    const line = oneLine(result.stderr);
    expect(line).toContain(named);
    expect(line).toContain(String(port));
    expect(await fs.readFile(manifest)).toEqual(bytes);
    expect(runningEditors(join(root, 'data'))).toEqual([]);
    expect(existsSync(join(root, 'data', 'editors'))).toBe(false);
    expect(existsSync(join(root, 'data', 'workspaces'))).toBe(false);
  }, 30_000);

  it('in-process: rejects with a StartupError, touches nothing and lets the folders go', async () => {
    const { root, manifest, bytes } = await folderWithManifest();
    const settings = await makeSettings({ root });
    const port = await occupiedPort();
    await expect(startService({ ...settings, port }, () => undefined)).rejects.toThrow(StartupError);
    expect(await fs.readFile(manifest)).toEqual(bytes);
    expect(existsSync(join(root, 'data', 'editors'))).toBe(false);
    expect(existsSync(join(root, 'manifests', LOCK_FILE))).toBe(false);
    // The folders are free again: a start on a free port serves them.
    const service = await startService(settings, () => undefined);
    cleanups.push(() => service.close({ stopEditors: true }));
    expect(service.port).toBeGreaterThan(0);
  }, 30_000);
});

describe('one service per manifests folder', () => {
  it('refuses a second service on the same folder, naming the first one\'s pid', async () => {
    const root = await tempRoot();
    await fs.writeFile(join(root, 'config.yaml'), stringify({ ports: portRange() }));
    const first = await startTestService({ root });
    cleanups.push(() => first.close({ stopEditors: true }));
    const result = await runMain(serviceEnv(root, { DEVBOX_PORT: '0' }));
    expect(result.code, result.stdout + result.stderr).toBe(2);
    const line = oneLine(result.stderr);
    expect(line).toContain(`pid ${process.pid}`);
    expect(line).toContain('DEVBOX_MANIFESTS_DIR');
    // The first one still holds it and serves.
    expect((await first.request('GET', '/health')).status).toBe(200);
  }, 30_000);

  it('refuses a second in-process service on the same folder', async () => {
    const first: TestService = await startTestService();
    cleanups.push(() => first.stop());
    await expect(startService(first.settings, () => undefined)).rejects.toThrow(new RegExp(`pid ${process.pid}\\b`));
    expect((await first.request('GET', '/health')).status).toBe(200);
    // The lock is a hidden file: no manifest to the controller.
    expect(existsSync(join(first.settings.manifestsDir, LOCK_FILE))).toBe(true);
    expect((await first.request('GET', '/manifests')).body).toEqual([]);
  });

  it('refuses a second service on the same data folder, even with its own manifests folder', async () => {
    const first: TestService = await startTestService();
    cleanups.push(() => first.stop());
    const other = await tempRoot();
    const settings = { ...first.settings, manifestsDir: join(other, 'manifests') };
    await expect(startService(settings, () => undefined)).rejects.toThrow(/data folder .*pid \d+.*DEVBOX_DATA_DIR/);
    // Nothing of the refused one is left behind: its manifests folder is free again.
    expect(existsSync(join(other, 'manifests', LOCK_FILE))).toBe(false);
    expect((await first.request('GET', '/health')).status).toBe(200);
  });

  it('takes over a stale lock: a dead pid, or a live pid with another start time (reused)', async () => {
    const dead = spawn(process.execPath, ['-e', '']);
    const deadPid = await new Promise<number>((resolve) => dead.once('exit', () => resolve(dead.pid!)));
    const me = readStat(process.pid)!;
    for (const stale of [{ pid: deadPid, startTicks: 1 }, { pid: process.pid, startTicks: me.startTicks - 1 }]) {
      const root = await tempRoot();
      const lock = join(root, 'manifests', LOCK_FILE);
      await fs.mkdir(join(root, 'manifests'), { recursive: true });
      await fs.writeFile(lock, JSON.stringify(stale));
      const settings = await makeSettings({ root });
      const service = await startService(settings, () => undefined);
      const held = JSON.parse(await fs.readFile(lock, 'utf8'));
      expect(held).toMatchObject({ pid: process.pid, startTicks: me.startTicks });
      await service.close({ stopEditors: true });
      // Released on close.
      expect(existsSync(lock)).toBe(false);
    }
  });

  it('is released on close, so the next service on the folder starts', async () => {
    const root = await tempRoot();
    const settings = await makeSettings({ root });
    const first = await startService(settings, () => undefined);
    await first.close({ stopEditors: true });
    const second = await startService(settings, () => undefined);
    cleanups.push(() => second.close({ stopEditors: true }));
    expect(second.port).toBeGreaterThan(0);
  });
});
