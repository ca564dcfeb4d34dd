// `npm start` as a process supervisor runs it (Databricks Apps, systemd, a container runtime):
// a signal to npm's own pid must end the service, not orphan it.
import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { descendants, readCmdline } from '../../src/core/procfs.ts';
import { eventually, killEditors, processExists, STUB_EDITOR } from '../helpers/service.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** True when something accepts a TCP connection on 127.0.0.1:port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: string | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

describe('npm start', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('ends the service cleanly on %s to npm\'s own pid', async (signal) => {
    const root = await fs.mkdtemp(join(tmpdir(), 'devbox-npm-start-'));
    const dataDir = join(root, 'data');
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DEVBOX_HOST: '127.0.0.1',
      DEVBOX_PORT: '0',
      DEVBOX_MANIFESTS_DIR: join(root, 'manifests'),
      DEVBOX_DATA_DIR: dataDir,
      DEVBOX_EDITOR_BIN: STUB_EDITOR,
    };
    delete env.DEVBOX_CONFIG;
    const npm = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    npm.stdout!.on('data', (chunk) => (output += chunk));
    npm.stderr!.on('data', (chunk) => (output += chunk));
    let servicePid: number | undefined;
    cleanups.push(async () => {
      if (servicePid !== undefined && processExists(servicePid)) process.kill(servicePid, 'SIGKILL');
      if (npm.exitCode === null && npm.signalCode === null) npm.kill('SIGKILL');
      await killEditors(dataDir);
      await fs.rm(root, { recursive: true, force: true });
    });

    // prestart compiles with tsc first.
    const url = await eventually(() => {
      if (npm.exitCode !== null) throw new Error(`npm start exited with ${npm.exitCode}:\n${output}`);
      return /serving on (http:\/\/\S+)/.exec(output)?.[1];
    }, 60_000);
    const port = Number(new URL(url).port);
    expect(port).toBeGreaterThan(0);
    expect(await accepts(port)).toBe(true);
    // The node process running dist/main.js, wherever it sits under npm.
    const service = descendants(npm.pid!).find((p) => readCmdline(p.pid).includes('dist/main.js'));
    expect(service, `no dist/main.js under npm:\n${output}`).toBeDefined();
    servicePid = service!.pid;
    // One editor running: the shutdown line says it stays, and how to stop editors with the service.
    const created = await (await fetch(`${url}/servers`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"name":"Kept"}' })).json() as { id: string };
    const started = await (await fetch(`${url}/servers/${created.id}/start`, { method: 'POST' })).json() as { data: { pid: number } };
    expect(started.data.pid, JSON.stringify(started)).toBeGreaterThan(0);

    process.kill(npm.pid!, signal);
    await eventually(() => !processExists(servicePid!), 15_000);
    expect(await accepts(port)).toBe(false);
    const exit = await exited(npm);
    expect(exit, output).toEqual({ code: 0, signal: null });
    expect(output).toContain(`${signal}: shutting down; 1 editor keeps running and the next start adopts it; ` +
      'to stop editors with the service, start it with DEVBOX_STOP_EDITORS_ON_EXIT=1');
    expect(processExists(started.data.pid)).toBe(true);
  }, 90_000);
});
