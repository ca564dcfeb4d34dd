import { describe, expect, it } from 'vitest';
import { devcontainerEnv } from '../../src/devcontainer/env.ts';
import { parseDevcontainer, sizeBytes } from '../../src/devcontainer/parse.ts';
import type { DevcontainerPlan } from '../../src/devcontainer/types.ts';

function plan(text: string): DevcontainerPlan {
  const result = parseDevcontainer(text, '.devcontainer/devcontainer.json', 'f'.repeat(64));
  if ('error' in result) throw new Error(result.error);
  return result.plan;
}

describe('parseDevcontainer', () => {
  it('reads JSON with comments and trailing commas, as VS Code does', () => {
    const p = plan(`{
      // the project's editor
      "name": "app", /* block */
      "customizations": { "vscode": { "extensions": ["ms-python.Python", "-ms-toolsai.jupyter", "redhat.vscode-yaml@1.2.3",], "settings": { "editor.tabSize": 2 } } },
    }`);
    expect(p.extensions).toEqual(['ms-python.python', 'redhat.vscode-yaml@1.2.3']);
    expect(p.settings).toEqual({ 'editor.tabSize': 2 });
    expect(p.warnings).toEqual([]);
    expect(p.waitFor).toBe('updateContentCommand');
  });

  it('gives a broken file at its line and column', () => {
    const result = parseDevcontainer('{\n  "name": "x"\n  "image": "y"\n}', 'devcontainer.json', '0');
    expect(result).toEqual({ error: 'devcontainer.json:3:3: comma expected' });
    expect(parseDevcontainer('[1]', 'a.json', '0')).toEqual({ error: expect.stringContaining('must be a JSON object') });
    expect(parseDevcontainer('', 'a.json', '0')).toEqual({ error: expect.stringMatching(/^a\.json:1:1: /) });
  });

  it('takes the lifecycle commands in their three forms, and drops empty ones', () => {
    const p = plan(JSON.stringify({
      onCreateCommand: 'echo created > created.txt',
      updateContentCommand: ['npm', 'ci'],
      postCreateCommand: { server: 'npm start', db: ['sh', '-c', 'echo db'] },
      postStartCommand: '',
      postAttachCommand: [],
      waitFor: 'postCreateCommand',
    }));
    expect(p.lifecycle.onCreateCommand).toEqual({ name: 'onCreateCommand', commands: [{ command: { shell: 'echo created > created.txt' } }] });
    expect(p.lifecycle.updateContentCommand?.commands).toEqual([{ command: { argv: ['npm', 'ci'] } }]);
    expect(p.lifecycle.postCreateCommand?.commands).toEqual([
      { label: 'server', command: { shell: 'npm start' } },
      { label: 'db', command: { argv: ['sh', '-c', 'echo db'] } },
    ]);
    expect(p.lifecycle.postStartCommand).toBeUndefined();
    expect(p.lifecycle.postAttachCommand).toBeUndefined();
    expect(p.waitFor).toBe('postCreateCommand');
  });

  it('warns about a malformed command, and about waitFor postAttachCommand', () => {
    const p = plan(JSON.stringify({ onCreateCommand: 42, postCreateCommand: { ok: 'true', bad: { x: 1 } }, waitFor: 'postAttachCommand' }));
    expect(p.lifecycle.onCreateCommand).toBeUndefined();
    expect(p.lifecycle.postCreateCommand?.commands).toEqual([{ label: 'ok', command: { shell: 'true' } }]);
    expect(p.waitFor).toBe('postStartCommand');
    expect(p.warnings).toEqual([
      expect.stringMatching(/^onCreateCommand: must be a string/),
      expect.stringMatching(/^postCreateCommand\.bad: must be a string or an array/),
      expect.stringMatching(/^waitFor: postAttachCommand runs when a person opens/),
    ]);
  });

  it('takes ports with their attributes, and says why another container\'s port is not', () => {
    const p = plan(JSON.stringify({
      forwardPorts: [3000, 'localhost:8080', 'db:5432', 70000, 3000],
      portsAttributes: { 3000: { label: 'App', protocol: 'https', onAutoForward: 'openBrowser' }, 8080: { protocol: 'ftp' } },
    }));
    expect(p.forwardPorts).toEqual([{ port: 3000, label: 'App', protocol: 'https', onAutoForward: 'openBrowser' }, { port: 8080 }]);
    expect(p.warnings).toEqual([
      expect.stringContaining('portsAttributes.8080.protocol'),
      expect.stringContaining('"db:5432" is not a port of the editor\'s own'),
      expect.stringContaining('70000 is not a port'),
    ]);
  });

  it('reads host requirements in bytes, and says a GPU is not asked for', () => {
    const p = plan(JSON.stringify({ hostRequirements: { cpus: 2, memory: '4gb', storage: '512MB', gpu: true } }));
    expect(p.hostRequirements).toEqual({ cpus: 2, memoryBytes: 4 * 2 ** 30, storageBytes: 512 * 2 ** 20 });
    expect(p.warnings).toEqual([expect.stringMatching(/^hostRequirements\.gpu: /)]);
    expect(sizeBytes('1.5tb')).toBe(1.5 * 2 ** 40);
    expect(sizeBytes('four')).toBeUndefined();
    expect(plan(JSON.stringify({ hostRequirements: { cpus: -1, memory: 'lots' } })).warnings).toHaveLength(2);
  });

  it('lists every field a container engine would need, with why, and fields of no reference', () => {
    const p = plan(JSON.stringify({
      image: 'mcr.microsoft.com/devcontainers/base:bookworm',
      build: { dockerfile: 'Dockerfile' }, dockerComposeFile: 'compose.yml', runArgs: ['--cap-add=SYS_PTRACE'], mounts: ['source=x,target=/x,type=bind'],
      features: { 'ghcr.io/devcontainers/features/node:1': {} }, initializeCommand: 'rm -rf ~', colour: 'blue',
    }));
    expect(p.image).toBe('mcr.microsoft.com/devcontainers/base:bookworm');
    const fields = p.warnings.map((w) => w.split(':')[0]);
    expect(fields).toEqual(['build', 'dockerComposeFile', 'runArgs', 'mounts', 'features', 'initializeCommand', 'colour']);
    expect(p.warnings.find((w) => w.startsWith('initializeCommand'))).toContain('never runs a command on the service\'s machine');
    expect(p.warnings.at(-1)).toBe('colour: not a field of the devcontainer.json reference; ignored');
  });

  it('keeps the variables code-server reads and the service\'s own out of the environment', () => {
    const p = plan(JSON.stringify({ containerEnv: { PORT: '3000', APP_PORT: '3000', DEVBOX_SERVER_NAME: 'other', 'bad-name': 'x' }, remoteEnv: { PASSWORD: 'x' } }));
    expect(p.containerEnv).toEqual({ APP_PORT: '3000' });
    expect(p.remoteEnv).toEqual({});
    expect(p.warnings).toHaveLength(4);
  });
});

describe('devcontainerEnv', () => {
  it('substitutes the reference\'s variables, remoteEnv over containerEnv, null removing one', () => {
    const p = plan(JSON.stringify({
      containerEnv: { TOOLS: '${containerWorkspaceFolder}/tools', HOME_COPY: '${localEnv:HOME}', GONE: 'x', NAME: '${containerWorkspaceFolderBasename}' },
      remoteEnv: { PATH: '${containerEnv:TOOLS}:${containerEnv:PATH}', MISSING: '${localEnv:NOPE:fallback}', GONE: null, ID: '${devcontainerId}' },
    }));
    const env = devcontainerEnv(p, { localEnv: { HOME: '/home/me' }, containerEnv: { PATH: '/usr/bin' }, containerWorkspaceFolder: '/data/ws', id: 'u-1' });
    expect(env).toEqual({ TOOLS: '/data/ws/tools', HOME_COPY: '/home/me', NAME: 'ws', PATH: '/data/ws/tools:/usr/bin', MISSING: 'fallback', ID: 'u-1' });
  });

  it('reads only the environment it is given: a repository cannot name the service\'s secrets into its editor', () => {
    const p = plan(JSON.stringify({ containerEnv: { T: '${localEnv:DATABRICKS_TOKEN}' } }));
    expect(devcontainerEnv(p, { localEnv: {}, containerWorkspaceFolder: '/w' })).toEqual({ T: '' });
  });
});
