// A repository's devcontainer.json honoured on the process runtime with the real code-server:
// repositories made here (a git repository served by `git daemon`, and a ZIP uploaded), their
// extensions installed from .vsix files (DEVBOX_VSIX_DIR, no marketplace), their settings merged
// under the manifest's, their environment in the editor's process, what a container engine would
// need listed as warnings, host requirements this machine cannot meet refused at the start, and
// the manifest's spec.devcontainer (ignore, or another file) obeyed.
import { promises as fs, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { resolveEditorBinary } from '../../src/runtime/editor-binary.ts';
import { buildVsix } from '../extensions/vsix.ts';
import { postForm } from '../helpers/form.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';
import { commitRepository, serveGitDaemon, type GitDaemon } from '../workspace/git-fixtures.ts';
import { buildZip } from '../workspace/zip-fixtures.ts';

const bin = resolveEditorBinary().path;
let service: TestService;
let root: string;
let daemon: GitDaemon;

/** A git repository under root/repos holding these files, committed. */
const repository = (name: string, files: Record<string, string>) => commitRepository(join(root, 'repos', name), files);

const FULL = `{
  // The project's own description of its editor (JSON with comments, trailing commas).
  "name": "Full",
  "image": "mcr.microsoft.com/devcontainers/base:bookworm",
  "build": { "dockerfile": "Dockerfile" },
  "dockerComposeFile": "compose.yml",
  "runArgs": ["--cap-add=SYS_PTRACE"],
  "mounts": ["source=cache,target=/cache,type=volume"],
  "features": { "ghcr.io/devcontainers/features/node:1": {} },
  "customizations": {
    "vscode": {
      "extensions": ["acme.one"],
      "settings": { "editor.fontSize": 19, "editor.tabSize": 8, },
    },
  },
  "containerEnv": { "GREETING": "hello \${containerWorkspaceFolderBasename}", "PORT": "3000" },
  "remoteEnv": { "TOOLS": "\${containerWorkspaceFolder}/tools", "FROM_SERVICE": "\${localEnv:DC_TEST_LOCAL:unset}" },
  "forwardPorts": [3000],
  "portsAttributes": { "3000": { "label": "App" } },
  "hostRequirements": { "cpus": 1, "memory": "64mb" },
}
`;

beforeAll(async () => {
  root = await fs.mkdtemp(join(tmpdir(), 'devbox-devcontainer-'));
  const vsixDir = join(root, 'vsix');
  await fs.mkdir(vsixDir);
  buildVsix(join(vsixDir, 'acme.one-1.0.0.vsix'), 'acme', 'one', '1.0.0');
  await repository('full', { '.devcontainer/devcontainer.json': FULL, 'README.md': '# full\n' });
  await repository('broken', { '.devcontainer/devcontainer.json': '{\n  "name": "x"\n  "image": "y"\n}\n' });
  daemon = await serveGitDaemon(join(root, 'repos'));
  process.env.DEVBOX_VSIX_DIR = vsixDir;
  process.env.DC_TEST_LOCAL = 'from the service';
  service = await startTestService({
    editorBin: bin,
    config: { editor: { startTimeoutSeconds: 60, readyTimeoutSeconds: 60, stopGraceSeconds: 5 }, capacity: { maxMemoryMb: 4000 } },
  });
  delete process.env.DEVBOX_VSIX_DIR;
}, 60_000);
afterAll(async () => {
  await service?.stop();
  await daemon?.stop();
  delete process.env.DC_TEST_LOCAL;
  await fs.rm(root, { recursive: true, force: true });
});

/** The editor process's environment, as /proc has it. */
function environmentOf(pid: number): Record<string, string> {
  return Object.fromEntries(readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
}

async function record(id: string) {
  return (await service.request('GET', `/servers/${id}`)).body;
}

/** Edits the server's manifest by hand, as a person or a GitOps sync would. */
async function editManifest(name: string, change: (manifest: any) => void): Promise<void> {
  const file = join(service.settings.manifestsDir, `${name}.yaml`);
  const manifest = parse(readFileSync(file, 'utf8'));
  change(manifest);
  await fs.writeFile(file, stringify(manifest));
}

describe('devcontainer.json on the process runtime', () => {
  it('a git repository\'s file: extensions installed, settings under the manifest\'s, environment in the editor, the rest listed as warnings', async () => {
    const created = await postForm(`${service.url}/servers/create-with-workspace`, {
      name: 'Full', extensions: '[]', github_url: daemon.url('full'),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { id, workspace_path: workspace } = created.body;
    // The manifest speaks to one setting the file also sets: the manifest wins.
    await editManifest('full', (m) => { m.spec.settings = { 'editor.tabSize': 2 }; });
    await eventually(async () => (await record(id)).generation === 2, 10_000);
    const started = await service.request('POST', `/servers/${id}/start`);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const body = await eventually(async () => {
      const r = await record(id);
      return r.status === 'running' && r.extension_status?.[0]?.state === 'Installed' ? r : undefined;
    }, 120_000);

    expect(body.devcontainer).toMatchObject({ state: 'applied', plan: { path: '.devcontainer/devcontainer.json', extensions: ['acme.one'], forwardPorts: [{ port: 3000, label: 'App' }] } });
    expect(body.devcontainer.plan.warnings.map((w: string) => w.split(':')[0])).toEqual(['containerEnv.PORT', 'build', 'dockerComposeFile', 'runArgs', 'mounts', 'features', 'image']);
    expect(body.conditions.find((c: { type: string }) => c.type === 'DevcontainerRead')).toMatchObject({ status: 'True', reason: 'Read' });

    // The extension, in the editor's own extensions folder as code-server lists it.
    const editor = join(service.settings.dataDir, 'editors', 'full');
    const { stdout } = await execa(bin, ['--extensions-dir', join(editor, 'extensions'), '--user-data-dir', join(editor, 'user-data'), '--list-extensions']);
    expect(stdout.split('\n')).toContain('acme.one');
    // The settings: the file's, with the manifest's tabSize over its 8.
    const settings = JSON.parse(await fs.readFile(join(editor, 'user-data', 'User', 'settings.json'), 'utf8'));
    expect(settings).toMatchObject({ 'editor.fontSize': 19, 'editor.tabSize': 2 });
    // The environment of the running editor process, substituted; PORT left to code-server.
    const env = environmentOf(body.pid);
    expect(env).toMatchObject({ GREETING: `hello ${basename(workspace)}`, TOOLS: `${workspace}/tools`, FROM_SERVICE: 'from the service' });
    expect(env.PORT).toBeUndefined();
    expect(env.DEVBOX_SERVER_NAME).toBe('full');
    // Said in the server's log, once.
    const logs = JSON.stringify((await service.request('GET', `/servers/${id}/logs`)).body);
    expect(logs).toContain('honouring .devcontainer/devcontainer.json');
    expect(logs).toContain('features: not honoured');
  }, 180_000);

  it('a ZIP\'s file whose host requirements this machine cannot meet is refused at the start; ignore and another path are obeyed', async () => {
    const zip = buildZip([
      { name: '.devcontainer.json', data: JSON.stringify({ hostRequirements: { cpus: 64, memory: '8tb' } }) },
      { name: 'alt/devcontainer.json', data: '// another file\n{ "customizations": { "vscode": { "settings": { "files.eol": "\\n" } } }, "containerEnv": { "ALT": "yes" } }' },
      { name: 'big/devcontainer.json', data: JSON.stringify({ hostRequirements: { memory: '5gb' } }) },
      { name: 'main.py', data: 'print(1)\n' },
    ]);
    const created = await postForm(`${service.url}/servers/create-with-workspace`, { name: 'Zipped', extensions: '[]' }, zip);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { id } = created.body;
    const refused = await service.request('POST', `/servers/${id}/start`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('HOST_REQUIREMENTS_UNMET');
    const failed = await eventually(async () => {
      const r = await record(id);
      return r.reason === 'HostRequirementsUnmet' ? r : undefined;
    }, 30_000);
    expect(failed).toMatchObject({ status: 'failed', pid: null });
    expect(failed.message).toMatch(/\.devcontainer\.json asks hostRequirements that cannot be met here: 64 CPUs \(this machine has \d+\), 8388608 MB of memory/);

    // Within the machine, but over what the config lets all editors use together.
    await editManifest('zipped', (m) => { m.spec.devcontainer = 'big/devcontainer.json'; });
    await eventually(async () => (await record(id)).generation === 2, 10_000);
    const again = await service.request('POST', `/servers/${id}/start`);
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'HOST_REQUIREMENTS_UNMET', message: expect.stringContaining('5120 MB of memory (all editors together may use 4000 MB, capacity.maxMemoryMb)') });

    // spec.devcontainer names another file: that one is honoured instead.
    await editManifest('zipped', (m) => { m.spec.devcontainer = 'alt/devcontainer.json'; });
    const started = await service.request('POST', `/servers/${id}/start`);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const running = await eventually(async () => {
      const r = await record(id);
      return r.status === 'running' && r.devcontainer?.plan?.path === 'alt/devcontainer.json' ? r : undefined;
    }, 60_000);
    expect(environmentOf(running.pid).ALT).toBe('yes');
    const settings = JSON.parse(await fs.readFile(join(service.settings.dataDir, 'editors', 'zipped', 'user-data', 'User', 'settings.json'), 'utf8'));
    expect(settings['files.eol']).toBe('\n');

    // ignore: the file is not read; the editor starts again without what it asked.
    await service.request('POST', `/servers/${id}/stop`);
    await editManifest('zipped', (m) => { m.spec.devcontainer = 'ignore'; });
    await service.request('POST', `/servers/${id}/start`);
    const ignored = await eventually(async () => {
      const r = await record(id);
      return r.status === 'running' && r.devcontainer?.state === 'ignored' ? r : undefined;
    }, 60_000);
    expect(environmentOf(ignored.pid).ALT).toBeUndefined();
  }, 180_000);

  it('a file that is not JSON is said at its line and column, and the editor still starts', async () => {
    const created = await postForm(`${service.url}/servers/create-with-workspace`, { name: 'Broken', extensions: '[]', github_url: daemon.url('broken') });
    expect(created.status).toBe(201);
    const started = await service.request('POST', `/servers/${created.body.id}/start`);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const body = await record(created.body.id);
    expect(body.devcontainer).toEqual({ state: 'invalid', message: '.devcontainer/devcontainer.json:3:3: comma expected', readAfter: expect.any(String), startedWith: expect.any(String) });
    expect(body.conditions.find((c: { type: string }) => c.type === 'DevcontainerRead')).toMatchObject({ status: 'False', reason: 'Invalid', message: '.devcontainer/devcontainer.json:3:3: comma expected' });
  }, 120_000);
});
