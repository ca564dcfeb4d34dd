// The "Operating with YAML" section of docs/manifests.md, run as written: each shell block marked
// `<!-- operator-step: NAME -->` is run with bash against a running service (the stub editor),
// and what it should have done is checked on disk, in /proc and through the API.
import { execFile } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { processExists, startTestService, type TestService } from '../helpers/service.ts';

const PROJECT = resolve(import.meta.dirname, '../..');
const STEPS = ['setup', 'create', 'stop', 'edit', 'copy', 'remove', 'break', 'fix', 'delete'];

/** The shell blocks of the operator section, by step name, in the order written. */
function operatorSteps(readme: string): Map<string, string> {
  const start = readme.indexOf('\n## Operating with YAML\n');
  if (start < 0) return new Map();
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const steps = new Map<string, string>();
  for (const [, name, code] of section.matchAll(/<!-- operator-step: ([\w-]+) -->\n```sh\n([\s\S]*?)\n```/g)) steps.set(name, code);
  return steps;
}

let service: TestService;
let steps: Map<string, string>;

beforeAll(async () => {
  steps = operatorSteps(await fs.readFile(join(PROJECT, 'docs/manifests.md'), 'utf8'));
  // A removed file's editor is stopped after 1 s here (30 s by default).
  service = await startTestService({ config: { controller: { orphanGraceSeconds: 1 } } });
});
afterAll(async () => {
  await service?.stop();
});

/**
 * Runs one step as a person pasting it into a shell would after the set-up block: from the
 * checkout, with the service's address and folders in the variables the blocks read. bash -e,
 * so a command of the block that fails (a wait that gives up) fails the step.
 */
function run(step: string): Promise<string> {
  const script = `${steps.get('setup')}\n${steps.get(step)}\n`;
  const env = { ...process.env, DEVBOX: service.url, DEVBOX_MANIFESTS_DIR: service.settings.manifestsDir, DEVBOX_DATA_DIR: service.settings.dataDir };
  return new Promise((done, fail) => {
    // Asynchronous: the service answering the block's requests runs in this process.
    // Killed before the test's own 30 s run out, so a wait that hangs shows what the block printed.
    execFile('bash', ['-e', '-c', script], { cwd: PROJECT, env, timeout: 25_000 }, (error, stdout, stderr) => {
      if (error) fail(new Error(`the step "${step}" of docs/manifests.md failed (${error.code ?? error.signal}):\n${stderr}\n${stdout}`));
      else done(stdout);
    });
  });
}

const file = (name: string) => join(service.settings.manifestsDir, `${name}.yaml`);
const byManifest = async (name: string) =>
  (await service.request('GET', '/servers')).body.find((s: { manifest: string }) => s.manifest === name);

describe('the operator workflow of docs/manifests.md, done by writing files only', () => {
  let hello: { id: string; pid: number; port: number; workspace_path: string };

  it('has every step, each a marked shell block', () => {
    expect([...steps.keys()]).toEqual(STEPS);
  });

  it('writes a manifest from the examples, which becomes a running server', async () => {
    const output = await run('create');
    const record = await byManifest('hello');
    expect(record).toMatchObject({ status: 'running', phase: 'Running' });
    expect(processExists(record.pid)).toBe(true);
    expect(output).toContain(`pid ${record.pid}`);
    expect(await fs.readFile(file('hello'), 'utf8')).toBe(await fs.readFile(join(PROJECT, 'manifests/examples/hello.yaml'), 'utf8'));
    expect(parse(await fs.readFile(join(service.settings.dataDir, 'status/hello.yaml'), 'utf8')).status.phase).toBe('Running');
    hello = record;
  });

  it('stops it by setting spec.running to false', async () => {
    await run('stop');
    expect(await byManifest('hello')).toMatchObject({ status: 'stopped', pid: null });
    expect(processExists(hello.pid)).toBe(false);
  });

  it('rewrites its spec, and the editor runs again with the new settings', async () => {
    await run('edit');
    const record = await byManifest('hello');
    expect(record).toMatchObject({ status: 'running', id: hello.id });
    expect(processExists(record.pid)).toBe(true);
    expect(record.observed_generation).toBe(record.generation);
    const settings = JSON.parse(await fs.readFile(join(service.settings.dataDir, 'editors/hello/user-data/User/settings.json'), 'utf8'));
    expect(settings).toMatchObject({ 'editor.fontSize': 16, 'files.autoSave': 'afterDelay' });
    hello = record;
  });

  it('copies the manifest into a second running server with its own uid and port', async () => {
    const output = await run('copy');
    const copy = await byManifest('hello-2');
    expect(copy).toMatchObject({ status: 'running', name: 'Hello 2' });
    expect(processExists(copy.pid)).toBe(true);
    expect(copy.id).not.toBe(hello.id);
    expect(copy.port).not.toBe(hello.port);
    expect(output).toContain(`hello-2 on port ${copy.port}`);
    expect(await byManifest('hello')).toMatchObject({ status: 'running', pid: hello.pid });
  });

  it('removes the copy\'s file: its editor is stopped after the grace period, its files stay', async () => {
    const copy = await byManifest('hello-2');
    await run('remove');
    expect((await service.request('GET', `/servers/${copy.id}`)).status).toBe(404);
    expect(await byManifest('hello-2')).toBeUndefined();
    expect(processExists(copy.pid)).toBe(false);
    expect(existsSync(copy.workspace_path)).toBe(true);
    expect(await byManifest('hello')).toMatchObject({ status: 'running', pid: hello.pid });
  });

  it('breaks the manifest: the problem is reported with the file and line, and the editor keeps running', async () => {
    const output = await run('break');
    const lines = (await fs.readFile(file('hello'), 'utf8')).split('\n');
    const at = `${file('hello')}:${lines.findIndex((l) => l.includes('yes please')) + 1}:`;
    const record = await byManifest('hello');
    expect(record.manifest_errors).toEqual([expect.stringMatching(new RegExp(`^${at}\\d+: spec\\.running: must be boolean$`))]);
    expect(output).toContain(record.manifest_errors[0]);
    expect(record).toMatchObject({ status: 'running', pid: hello.pid });
    expect(processExists(hello.pid)).toBe(true);
    const entry = (await service.request('GET', '/manifests')).body.find((m: { name: string }) => m.name === 'hello');
    expect(entry).toMatchObject({ valid: false, errors: record.manifest_errors });
    expect(service.lines.some((l) => l.includes(record.manifest_errors[0]))).toBe(true);
    expect(output).toContain('manifest is invalid');
  });

  it('fixes it: the problems go and the editor was never restarted', async () => {
    await run('fix');
    const record = await byManifest('hello');
    expect(record.manifest_errors).toBeUndefined();
    expect(record).toMatchObject({ status: 'running', pid: hello.pid });
    expect(processExists(hello.pid)).toBe(true);
  });

  it('deletes the server with its files', async () => {
    await run('delete');
    expect((await service.request('GET', `/servers/${hello.id}`)).status).toBe(404);
    expect(processExists(hello.pid)).toBe(false);
    expect(existsSync(hello.workspace_path)).toBe(false);
    expect(existsSync(file('hello'))).toBe(false);
  });
});
