// The manifests folder is untrusted input: forged status blocks, copies of other manifests, and
// entries of every kind (special files, links, folders, huge files) must neither make the service
// signal a process it did not launch for that very server nor take it down.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { createServer as createSocketServer, type Server as SocketServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { readStat } from '../../src/core/procfs.ts';
import { eventually, killEditors, portRange, processExists, request, startTestService, STUB_EDITOR, type TestService } from '../helpers/service.ts';

const MAIN = new URL('../../src/main.ts', import.meta.url).pathname;

let service: TestService;
/** Processes this service did not launch, which it must never signal. */
const strangers: ChildProcess[] = [];

beforeAll(async () => {
  service = await startTestService({ config: { controller: { resyncSeconds: 1 } } });
});
afterAll(async () => {
  for (const child of strangers) child.kill('SIGKILL');
  await service?.stop();
});

const file = (name: string) => join(service.settings.manifestsDir, `${name}.yaml`);
const byManifest = async (name: string) =>
  (await service.request('GET', '/servers')).body.find((s: { manifest: string }) => s.manifest === name);
const manifestEntry = async (name: string) =>
  (await service.request('GET', '/manifests')).body.find((m: { name: string }) => m.name === name);

/** A process in its own group, as an editor would be, that this service never launched. */
function stranger(): { pid: number; startTicks: number } {
  const child = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
  strangers.push(child);
  const stat = readStat(child.pid!)!;
  return { pid: child.pid!, startTicks: stat.startTicks };
}

function manifest(name: string, spec: Record<string, unknown>, status?: Record<string, unknown>, uid?: string): string {
  return stringify({
    apiVersion: 'devbox.dev/v1alpha1',
    kind: 'EditorServer',
    metadata: { name, ...(uid ? { uid } : {}) },
    spec,
    ...(status ? { status } : {}),
  });
}

describe('a status block names a process', () => {
  it('that this service did not launch for the server: it is never stopped, adopted or killed', async () => {
    const other = stranger();
    const forged = { phase: 'Running', port: service.settings.config.ports.max, pid: other.pid, pidStartTicks: other.startTicks };
    await fs.writeFile(file('forged-stop'), manifest('forged-stop', { running: false }, forged));
    await fs.writeFile(file('forged-run'), manifest('forged-run', { running: true }, forged));

    const stopped = await eventually(async () => {
      const s = await byManifest('forged-stop');
      return s?.status === 'stopped' ? s : undefined;
    });
    expect(stopped.pid).toBeNull();
    const running = await eventually(async () => {
      const s = await byManifest('forged-run');
      return s?.status === 'running' ? s : undefined;
    });
    expect(running.pid).not.toBe(other.pid);
    expect(processExists(other.pid)).toBe(true);

    // Neither stopping nor deleting the server reaches the stranger.
    await service.request('POST', `/servers/${running.id}/stop`);
    await service.request('DELETE', `/servers/${running.id}`);
    await service.request('DELETE', `/servers/${stopped.id}`);
    expect(processExists(running.pid)).toBe(false);
    expect(processExists(other.pid)).toBe(true);
    const warnings: string[] = [...service.lines];
    expect(warnings.some((l) => l.includes(`pid ${other.pid}`) && /not this server's editor/.test(l))).toBe(true);
  });
});

describe('a copied manifest', () => {
  it('becomes a separate server with its own uid, port and editor; the original is untouched', async () => {
    const orig = (await service.request('POST', '/servers', { name: 'orig' })).body;
    const started = (await service.request('POST', `/servers/${orig.id}/start`)).body.data;
    const text = await fs.readFile(file('orig'), 'utf8');
    // cp orig.yaml copy.yaml, then change metadata.name only.
    await fs.writeFile(file('copy'), text.replace('name: orig', 'name: copy'));

    const copy = await eventually(async () => {
      const s = await byManifest('copy');
      return s?.status === 'running' ? s : undefined;
    });
    expect(copy.id).not.toBe(orig.id);
    expect(copy.port).not.toBe(orig.port);
    expect(copy.pid).not.toBe(started.pid);
    expect(copy.workspace_path).not.toBe(orig.workspace_path);
    const original = (await service.request('GET', `/servers/${orig.id}`)).body;
    expect(original).toMatchObject({ manifest: 'orig', status: 'running', pid: started.pid, port: orig.port });
    const ids = (await service.request('GET', '/servers')).body.map((s: { id: string }) => s.id);
    expect(new Set(ids).size).toBe(ids.length);
    // The copy's file stays as copied; its own uid is kept in the data folder.
    expect(await fs.readFile(file('copy'), 'utf8')).toBe(text.replace('name: orig', 'name: copy'));
    expect(parse(await fs.readFile(`${service.settings.dataDir}/status/copy.yaml`, 'utf8')).uid).toBe(copy.id);
    const entry = await manifestEntry('copy');
    expect(entry.id).toBe(copy.id);
    expect(entry.warnings.join('\n')).toMatch(new RegExp(`uid ${orig.id}.*"orig"`));
    const copyLogs: string[] = (await service.request('GET', `/servers/${copy.id}/logs?lines=1000`)).body.data.logs;
    expect(copyLogs.join('\n')).toMatch(/copy of "orig"|belongs to server "orig"/);

    // Stopping and deleting the copy leaves the original's editor and files alone.
    await service.request('DELETE', `/servers/${copy.id}`);
    expect(processExists(started.pid)).toBe(true);
    expect(processExists(copy.pid)).toBe(false);
    await fs.access(orig.workspace_path);
    await service.request('DELETE', `/servers/${orig.id}`);
  });

  it('with only a uid in common: two files are listed under two ids, the second one warned about', async () => {
    const uid = '0b6f9a3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b';
    await fs.writeFile(file('twin-a'), manifest('twin-a', { running: false }, undefined, uid));
    await eventually(async () => (await byManifest('twin-a'))?.status === 'stopped');
    await fs.writeFile(file('twin-b'), manifest('twin-b', { running: false }, undefined, uid));
    const b = await eventually(async () => {
      const s = await byManifest('twin-b');
      return s?.status === 'stopped' ? s : undefined;
    });
    const a = await byManifest('twin-a');
    expect(a.id).toBe(uid);
    expect(b.id).not.toBe(uid);
    expect((await manifestEntry('twin-b')).warnings.join('\n')).toMatch(/twin-a/);
    await service.request('DELETE', `/servers/${a.id}`);
    await service.request('DELETE', `/servers/${b.id}`);
  });
});

describe('entries of the manifests folder that are not manifests', () => {
  let socket: SocketServer | undefined;
  afterAll(() => socket?.close());

  it('are each reported with a clear error, never read through a link or block the service', async () => {
    const dir = service.settings.manifestsDir;
    const outside = join(service.root, 'outside');
    await fs.mkdir(outside);
    await fs.writeFile(join(outside, 'secret.yaml'), 'metadata: { name: TOPSECRET-VALUE }\n');
    execFileSync('mkfifo', [join(outside, 'pipe')]);
    execFileSync('mkfifo', [join(dir, 'fifo.yaml')]);
    await fs.symlink(join(outside, 'secret.yaml'), join(dir, 'secret-link.yaml'));
    await fs.symlink(join(outside, 'pipe'), join(dir, 'pipe-link.yaml'));
    await fs.symlink('/etc/shadow', join(dir, 'shadow.yaml'));
    await fs.mkdir(join(dir, 'folder.yaml'));
    await fs.writeFile(join(dir, 'huge.yaml'), hugeManifest('huge'));
    socket = createSocketServer();
    await new Promise<void>((resolve) => socket!.listen(join(dir, 'socket.yaml'), resolve));
    const device = process.getuid?.() === 0;
    if (device) execFileSync('mknod', [join(dir, 'device.yaml'), 'c', '1', '5']); // like /dev/zero

    const expected: Record<string, RegExp> = {
      'fifo': /is a FIFO/,
      'secret-link': /is a symbolic link/,
      'pipe-link': /is a symbolic link/,
      'shadow': /is a symbolic link/,
      'folder': /is a folder/,
      'huge': /larger than 256 KiB/,
      'socket': /is a socket/,
      ...(device ? { device: /is a character device/ } : {}),
    };
    const list = await eventually(async () => {
      const body = (await service.request('GET', '/manifests')).body as Array<{ name: string; valid: boolean; errors: string[] }>;
      return Object.keys(expected).every((name) => body.some((m) => m.name === name && !m.valid)) ? body : undefined;
    }, 15_000);
    for (const [name, pattern] of Object.entries(expected)) {
      const entry = list.find((m) => m.name === name)!;
      expect(entry.errors.join('\n'), name).toMatch(pattern);
      expect(entry.errors.join('\n'), name).toMatch(/regular file|at most/);
    }
    expect(JSON.stringify(list)).not.toContain('TOPSECRET');
    expect(service.lines.join('\n')).not.toContain('TOPSECRET');

    // Nothing is stuck: a server is still created and started at once.
    const { id } = (await service.request('POST', '/servers', { name: 'after hostile entries' })).body;
    const start = await service.request('POST', `/servers/${id}/start`);
    expect(start.status).toBe(200);
    expect((await service.request('GET', '/health')).status).toBe(200);
    await service.request('DELETE', `/servers/${id}`);
  });
});

/** A manifest of about 5 MB whose YAML document takes far more heap than npm start allows. */
function hugeManifest(name: string): string {
  const lines = ['apiVersion: devbox.dev/v1alpha1', 'kind: EditorServer', 'metadata:', `  name: ${name}`, 'spec:', '  running: false', '  settings:'];
  let size = 0;
  for (let i = 0; size < 5 * 1024 * 1024; i++) {
    const line = `    "key.${i}": [1, 2, "three"]`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join('\n') + '\n';
}

describe('a 5 MB manifest', () => {
  it('does not exhaust npm start\'s bounded heap: the service starts and reports the file', async () => {
    const root = join(service.root, 'bounded');
    const manifestsDir = join(root, 'manifests');
    await fs.mkdir(manifestsDir, { recursive: true });
    await fs.writeFile(join(manifestsDir, 'huge.yaml'), hugeManifest('huge'));
    await fs.writeFile(join(root, 'config.yaml'), stringify({ ports: portRange() }));
    const env = {
      ...process.env,
      DEVBOX_HOST: '127.0.0.1',
      DEVBOX_PORT: '0',
      DEVBOX_MANIFESTS_DIR: manifestsDir,
      DEVBOX_DATA_DIR: join(root, 'data'),
      DEVBOX_CONFIG: join(root, 'config.yaml'),
      DEVBOX_EDITOR_BIN: STUB_EDITOR,
    };
    // The heap bound of `npm start` (package.json).
    const child = spawn(process.execPath, ['--max-semi-space-size=2', '--max-old-space-size=160', '--disable-warning=DEP0060', MAIN], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      let output = '';
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout!.on('data', (chunk) => {
          output += chunk;
          const match = /serving on (http:\/\/\S+)/.exec(output);
          if (match) resolve(match[1]);
        });
        child.stderr!.on('data', (chunk) => (output += chunk));
        child.once('exit', (code, signal) => reject(new Error(`service exited with ${code ?? signal}:\n${output.slice(-2000)}`)));
      });
      const entry = await eventually(async () =>
        (await request(url, 'GET', '/manifests')).body.find((m: { name: string }) => m.name === 'huge'));
      expect(entry.valid).toBe(false);
      expect(entry.errors.join('\n')).toMatch(/larger than 256 KiB/);
      expect((await request(url, 'GET', '/health')).status).toBe(200);
    } finally {
      child.kill('SIGKILL');
      await killEditors(env.DEVBOX_DATA_DIR);
    }
  }, 60_000);
});
