// devcontainer.json's lifecycle commands on the real service (process runtime, stub editor), from
// repositories made here: a git repository served by `git daemon` and uploaded ZIPs. The commands
// write into files of the workspace, so what ran, and how often, is read back from the disk.
import { existsSync, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { postForm } from '../helpers/form.ts';
import { startPortProgram } from '../helpers/port-program.ts';
import { eventually, processExists, runningEditors, startTestService, type TestService } from '../helpers/service.ts';
import { commitRepository, serveGitDaemon, type GitDaemon } from '../workspace/git-fixtures.ts';
import { buildZip } from '../workspace/zip-fixtures.ts';

let base: string;
let daemon: GitDaemon;
const services: TestService[] = [];

beforeAll(async () => {
  base = await fs.mkdtemp(join(tmpdir(), 'devbox-lifecycle-repos-'));
  daemon = await serveGitDaemon(base);
});
afterAll(async () => {
  await daemon?.stop();
  await fs.rm(base, { recursive: true, force: true });
});
afterEach(async () => {
  for (const service of services.splice(0)) await service.stop();
});

/** A git repository under the daemon's base holding these files, committed; its URL. */
async function repoWith(name: string, files: Record<string, string>): Promise<string> {
  await commitRepository(join(base, name), files);
  return daemon.url(name);
}

async function service(overrides: Parameters<typeof startTestService>[0] = {}): Promise<TestService> {
  const started = await startTestService(overrides);
  services.push(started);
  return started;
}

/** The lines of a file in the workspace (none when it is not there yet). */
async function linesOf(workspace: string, file: string): Promise<string[]> {
  const text = await fs.readFile(join(workspace, file), 'utf8').catch(() => '');
  return text.split('\n').filter((l) => l !== '');
}

/** The server's record as the API shows it: phase, reason, message, conditions and what devcontainer.json gave. */
async function statusOf(s: TestService, id: string) {
  return (await s.request('GET', `/servers/${id}`)).body;
}

const conditionOf = (status: any, type: string) => status?.conditions?.find((c: any) => c.type === type);

async function logsOf(s: TestService, id: string): Promise<string[]> {
  return (await s.request('GET', `/servers/${id}/logs?lines=1000`)).body.data.logs;
}

// Every form: a string through the shell, an array with no shell, an object of named commands run side by side.
const EVERY_FORM = `{
  // devcontainer.json is JSON with comments
  "onCreateCommand": "echo on-create >> once.log",
  "updateContentCommand": ["sh", "-c", "echo update-content >> once.log"],
  "postCreateCommand": {
    "first": "echo post-create-first >> once.log",
    "second": ["sh", "-c", "echo post-create-second >> once.log"]
  },
  "postStartCommand": "echo start >> start.log; echo started for $DEVBOX_SERVER_NAME in $(pwd)",
  "postAttachCommand": "echo attach >> attach.log"
}
`;

describe('lifecycle commands from a git repository', () => {
  it('runs the once-per-workspace commands once across an editor and a service restart, postStart at each start, postAttach at an open', async () => {
    const url = await repoWith('every-form', { '.devcontainer/devcontainer.json': EVERY_FORM, 'README.md': '# every form\n' });
    const first = await service();
    const created = await postForm(`${first.url}/servers/create-with-workspace`, { name: 'Every form', extensions: '[]', github_url: url });
    expect(created.status).toBe(201);
    const { id, workspace_path: workspace } = created.body;
    const started = await first.request('POST', `/servers/${id}/start`);
    expect(started.status).toBe(200);

    await eventually(async () => (await linesOf(workspace, 'start.log')).length === 1, 20_000);
    expect((await linesOf(workspace, 'once.log')).sort()).toEqual(['on-create', 'post-create-first', 'post-create-second', 'update-content']);
    // In order: onCreate, then updateContent, then postCreate's two side by side.
    expect((await linesOf(workspace, 'once.log')).slice(0, 2)).toEqual(['on-create', 'update-content']);
    const status = await eventually(async () => {
      const s = await statusOf(first, id);
      return conditionOf(s, 'LifecycleCommands')?.status === 'True' && s;
    });
    expect(Object.fromEntries(Object.entries(status.devcontainer.lifecycle).map(([k, v]: [string, any]) => [k, v.state]))).toEqual({
      onCreateCommand: 'Succeeded', updateContentCommand: 'Succeeded', postCreateCommand: 'Succeeded', postStartCommand: 'Succeeded',
    });
    // Output in the server's log, by step (and by name in the object form).
    const logs = await eventually(async () => {
      const lines = await logsOf(first, id);
      return lines.some((l) => l.includes(`[postStartCommand] started for every-form in ${workspace}`)) && lines;
    });
    expect(logs.some((l) => /postCreateCommand: running first, second/.test(l))).toBe(true);

    // Opening the editor through the proxy (its WebSocket) runs postAttach; a second tab beside it does not.
    const port = created.body.port;
    const tab = await openEditor(first, port);
    await eventually(async () => (await linesOf(workspace, 'attach.log')).length === 1);
    const second = await openEditor(first, port);
    await closeTab(second);
    await closeTab(tab);
    // Every tab closed, then one opened again: postAttach once more. (The proxy may see the close
    // a moment after the browser does: a tab opened before that is still "beside" the other.)
    await eventually(async () => {
      const again = await openEditor(first, port);
      const attached = await eventually(async () => (await linesOf(workspace, 'attach.log')).length === 2, 3000).catch(() => false);
      await closeTab(again);
      return attached;
    }, 20_000);

    // The editor restarted: postStart again, the once-per-workspace ones not.
    expect((await first.request('POST', `/servers/${id}/restart`)).status).toBe(200);
    await eventually(async () => (await linesOf(workspace, 'start.log')).length === 2, 20_000);

    // The service restarted (the editor keeps running and is adopted), then the server stopped and started.
    const root = join(first.settings.manifestsDir, '..');
    await first.close({ stopEditors: false });
    services.splice(services.indexOf(first), 1);
    const second2 = await service({ root, config: { ports: first.settings.config.ports } });
    await eventually(async () => (await second2.request('GET', `/servers/${id}`)).body.phase === 'Running', 20_000);
    // Adopted, not started: no postStart for it.
    expect(await linesOf(workspace, 'start.log')).toHaveLength(2);
    expect((await second2.request('POST', `/servers/${id}/stop`)).status).toBe(200);
    expect((await second2.request('POST', `/servers/${id}/start`)).status).toBe(200);
    await eventually(async () => (await linesOf(workspace, 'start.log')).length === 3, 20_000);
    expect(await linesOf(workspace, 'once.log')).toHaveLength(4);
    // The second tab, opened beside the first, ran nothing.
    expect(await linesOf(workspace, 'attach.log')).toHaveLength(2);
  }, 90_000);

  it('runs them again for a new workspace: the server deleted and made again', async () => {
    const url = await repoWith('made-again', { '.devcontainer.json': '{ "onCreateCommand": "echo on-create >> once.log" }' });
    const s = await service();
    for (let round = 1; round <= 2; round++) {
      const created = await postForm(`${s.url}/servers/create-with-workspace`, { name: 'Made again', extensions: '[]', github_url: url });
      expect(created.status).toBe(201);
      expect((await s.request('POST', `/servers/${created.body.id}/start`)).status).toBe(200);
      await eventually(async () => (await linesOf(created.body.workspace_path, 'once.log')).length === 1, 20_000);
      expect((await s.request('DELETE', `/servers/${created.body.id}`)).status).toBeLessThan(300);
    }
  }, 60_000);
});

describe('lifecycle commands from a ZIP', () => {
  it('marks the server when a command fails, skips the rest, and still starts the editor', async () => {
    const zip = buildZip([{ name: 'project/.devcontainer/devcontainer.json', data: JSON.stringify({
      onCreateCommand: 'echo on-create >> once.log',
      postCreateCommand: 'echo about to fail; echo "npm ERR! missing script: setup" >&2; exit 2',
      postStartCommand: 'echo start >> start.log',
    }) }]);
    const s = await service();
    const created = await postForm(`${s.url}/servers/create-with-workspace`, { name: 'Failing', extensions: '[]' }, zip);
    expect(created.status).toBe(201);
    expect((await s.request('POST', `/servers/${created.body.id}/start`)).status).toBe(200);
    const status = await eventually(async () => {
      const st = await statusOf(s, created.body.id);
      return conditionOf(st, 'LifecycleCommands')?.status === 'False' && st;
    }, 20_000);
    expect(conditionOf(status, 'LifecycleCommands')).toMatchObject({ reason: 'CommandFailed', message: 'postCreateCommand exited with code 2: npm ERR! missing script: setup' });
    expect(status.devcontainer.lifecycle.postCreateCommand).toMatchObject({ state: 'Failed', exitCode: 2 });
    expect(status.devcontainer.lifecycle.postStartCommand).toMatchObject({ state: 'Skipped' });
    expect(await linesOf(created.body.workspace_path, 'start.log')).toEqual([]);
    expect((await s.request('GET', `/servers/${created.body.id}`)).body.status).toBe('running');
    expect((await logsOf(s, created.body.id)).some((l) => l.includes('[ERROR] [controller] postCreateCommand exited with code 2'))).toBe(true);

    // devcontainer.json fixed in the workspace, and a restart (our rebuild): the failed step runs
    // again, then what it held back; onCreate, which succeeded, does not.
    const workspace = created.body.workspace_path;
    await fs.writeFile(join(workspace, '.devcontainer', 'devcontainer.json'), JSON.stringify({
      onCreateCommand: 'echo on-create >> once.log',
      postCreateCommand: 'echo post-create >> once.log',
      postStartCommand: 'echo start >> start.log',
    }));
    const restarted = await s.request('POST', `/servers/${created.body.id}/restart`);
    expect(restarted.status, JSON.stringify(restarted.body)).toBe(200);
    const fixed = await eventually(async () => {
      const st = await statusOf(s, created.body.id);
      return conditionOf(st, 'LifecycleCommands')?.status === 'True' && st.devcontainer.lifecycle.postStartCommand?.state === 'Succeeded' && st;
    }, 20_000);
    expect(fixed.devcontainer.lifecycle.postCreateCommand.state).toBe('Succeeded');
    expect(await linesOf(workspace, 'once.log')).toEqual(['on-create', 'post-create']);
    expect(await linesOf(workspace, 'start.log')).toEqual(['start']);
  }, 60_000);

  it("runs the object form's named commands side by side, each one's output under its name", async () => {
    // Each waits for the other to have started: run one after the other, they would never end.
    // (README.md beside the folder: a ZIP of one folder is unwrapped.)
    const zip = buildZip([{ name: 'README.md', data: '# side by side\n' }, { name: '.devcontainer/devcontainer.json', data: JSON.stringify({
      waitFor: 'postCreateCommand',
      postCreateCommand: {
        left: 'touch left.started; echo left waits for right; while [ ! -f right.started ]; do sleep 0.05; done',
        right: ['sh', '-c', 'touch right.started; echo right waits for left; while [ ! -f left.started ]; do sleep 0.05; done'],
      },
    }) }]);
    const s = await service();
    const created = await postForm(`${s.url}/servers/create-with-workspace`, { name: 'Side by side', extensions: '[]' }, zip);
    expect((await s.request('POST', `/servers/${created.body.id}/start`)).status).toBe(200);
    const record = await eventually(async () => {
      const st = await statusOf(s, created.body.id);
      return st.devcontainer?.lifecycle?.postCreateCommand?.state === 'Succeeded' && st;
    }, 20_000);
    expect(record.status).toBe('running');
    const logs = await logsOf(s, created.body.id);
    expect(logs.some((l) => l.endsWith('[postCreateCommand left] left waits for right'))).toBe(true);
    expect(logs.some((l) => l.endsWith('[postCreateCommand right] right waits for left'))).toBe(true);
  }, 60_000);

  it('keeps the editor from starting until postCreate ends when waitFor says postCreateCommand', async () => {
    const zip = buildZip([{ name: '.devcontainer.json', data: JSON.stringify({
      waitFor: 'postCreateCommand',
      postCreateCommand: 'while [ ! -f go ]; do sleep 0.05; done; echo created >> once.log',
    }) }]);
    const s = await service();
    const created = await postForm(`${s.url}/servers/create-with-workspace`, { name: 'Waits', extensions: '[]' }, zip);
    const starting = s.request('POST', `/servers/${created.body.id}/start`).catch(() => undefined);
    await eventually(async () => (await statusOf(s, created.body.id))?.reason === 'RunningLifecycleCommands', 20_000);
    const held = await statusOf(s, created.body.id);
    expect(held).toMatchObject({ phase: 'Provisioning', message: 'running postCreateCommand' });
    expect(runningEditors(s.settings.dataDir).map((e) => e.name)).not.toContain('waits');
    await fs.writeFile(join(created.body.workspace_path, 'go'), '');
    await eventually(async () => (await s.request('GET', `/servers/${created.body.id}`)).body.status === 'running', 20_000);
    expect(await linesOf(created.body.workspace_path, 'once.log')).toEqual(['created']);
    await starting;
  }, 60_000);

  it('ends a command under way when the server is stopped or deleted, and runs it again at the next start', async () => {
    const zip = buildZip([{ name: '.devcontainer.json', data: JSON.stringify({
      waitFor: 'postCreateCommand',
      postCreateCommand: 'sleep 600 & echo $! > child.pid; echo $$ >> pc.pid; while [ ! -f go ]; do sleep 0.05; done; echo created >> once.log',
    }) }]);
    const s = await service();
    const created = await postForm(`${s.url}/servers/create-with-workspace`, { name: 'Cut short', extensions: '[]' }, zip);
    const { id, workspace_path: workspace } = created.body;
    const pids = async (file: string) => (await linesOf(workspace, file)).map(Number);
    void s.request('POST', `/servers/${id}/start`).catch(() => undefined);
    const [first] = await eventually(async () => (await pids('pc.pid')).length === 1 && (await pids('child.pid')).length === 1 && pids('pc.pid'), 20_000);
    const child = (await pids('child.pid'))[0];
    expect(processExists(first) && processExists(child)).toBe(true);
    expect((await s.request('POST', `/servers/${id}/stop`)).status).toBe(200);
    // The command and what it started are gone, and it counts as not run (not Failed).
    await eventually(() => !processExists(first) && !processExists(child));
    const stopped = await eventually(async () => {
      const record = await statusOf(s, id);
      return record.phase === 'Stopped' && record;
    });
    expect(stopped.devcontainer.lifecycle.postCreateCommand).toBeUndefined();

    void s.request('POST', `/servers/${id}/start`).catch(() => undefined);
    const again = await eventually(async () => (await pids('pc.pid')).length === 2 && pids('pc.pid'), 20_000);
    expect(again[1]).not.toBe(first);
    expect((await s.request('DELETE', `/servers/${id}`)).status).toBeLessThan(300);
    await eventually(() => !processExists(again[1]));
  }, 60_000);

  it('starts the editor while postCreate still runs with the default waitFor', async () => {
    const zip = buildZip([{ name: '.devcontainer.json', data: JSON.stringify({
      postCreateCommand: 'while [ ! -f go ]; do sleep 0.05; done; echo created >> once.log',
    }) }]);
    const s = await service();
    const created = await postForm(`${s.url}/servers/create-with-workspace`, { name: 'Goes ahead', extensions: '[]' }, zip);
    expect((await s.request('POST', `/servers/${created.body.id}/start`)).status).toBe(200);
    await eventually(async () => (await statusOf(s, created.body.id))?.devcontainer?.lifecycle?.postCreateCommand?.state === 'Running', 20_000);
    expect(runningEditors(s.settings.dataDir).map((e) => e.name)).toContain('goes-ahead');
    await fs.writeFile(join(created.body.workspace_path, 'go'), '');
    await eventually(async () => (await statusOf(s, created.body.id))?.devcontainer?.lifecycle?.postCreateCommand?.state === 'Succeeded', 20_000);
    expect(await linesOf(created.body.workspace_path, 'once.log')).toEqual(['created']);
  }, 60_000);
});

describe('lifecycle commands in a workspace written by hand', () => {
  it("bounds the lines a command puts into the server's log, and says how many it left out", async () => {
    const s = await service();
    const created = await s.request('POST', '/servers', { name: 'Chatty' });
    await fs.writeFile(join(created.body.workspace_path, '.devcontainer.json'), JSON.stringify({ postCreateCommand: 'seq 1 3000; echo done > done.txt' }));
    expect((await s.request('POST', `/servers/${created.body.id}/start`)).status).toBe(200);
    const logs = await eventually(async () => {
      const lines = await logsOf(s, created.body.id);
      return lines.some((l) => /postCreateCommand finished/.test(l)) && lines;
    }, 20_000);
    const output = logs.filter((l) => l.includes('[postCreateCommand] '));
    expect(output.length).toBeGreaterThan(0);
    expect(output.length).toBeLessThan(3000);
    const marker = logs.find((l) => /postCreateCommand: \d+ lines of output not logged/.test(l));
    expect(Number(/(\d+) lines of output/.exec(marker!)![1]) + output.length).toBe(3000);
  }, 60_000);


  it('lets an extension added while a command runs in the background wait for it, without cutting it short', async () => {
    const s = await service();
    const created = await s.request('POST', '/servers', { name: 'Busy' });
    const { id, workspace_path: workspace } = created.body;
    await fs.writeFile(join(workspace, '.devcontainer.json'), JSON.stringify({ postCreateCommand: 'echo $$ >> pc.pid; while [ ! -f go ]; do sleep 0.05; done' }));
    expect((await s.request('POST', `/servers/${id}/start`)).status).toBe(200);
    await eventually(async () => (await statusOf(s, id)).devcontainer?.lifecycle?.postCreateCommand?.state === 'Running', 20_000);
    const before = (await statusOf(s, id)).generation;
    const adding = s.request('POST', `/servers/${id}/install-extension`, { extension: 'acme.later' }).catch(() => undefined);
    // The spec change was acted on (observed) while the command went on, not started again.
    await eventually(async () => {
      const record = await statusOf(s, id);
      return record.generation > before && record.observed_generation === record.generation;
    }, 20_000);
    const [pid] = (await linesOf(workspace, 'pc.pid')).map(Number);
    expect(await linesOf(workspace, 'pc.pid')).toHaveLength(1);
    expect(processExists(pid)).toBe(true);
    await fs.writeFile(join(workspace, 'go'), '');
    await eventually(async () => existsSync(join(s.settings.dataDir, 'editors', 'busy', 'extensions', 'acme.later-1.0.0'))
      && (await statusOf(s, id)).devcontainer.lifecycle.postCreateCommand.state === 'Succeeded', 20_000);
    expect(await linesOf(workspace, 'pc.pid')).toHaveLength(1);
    expect(s.lines.filter((l) => /were not looked at|still running/.test(l))).toEqual([]);
    await adding;
  }, 60_000);

  it("takes an editor tab for an attach, not a forwarded port's WebSocket", async () => {
    const s = await service();
    const created = await s.request('POST', '/servers', { name: 'Forwards' });
    const { id, port, workspace_path: workspace } = created.body;
    await fs.writeFile(join(workspace, '.devcontainer.json'), JSON.stringify({ postAttachCommand: 'echo attach >> attach.log' }));
    expect((await s.request('POST', `/servers/${id}/start`)).status).toBe(200);
    const program = await startPortProgram({ server: 'forwards' });
    try {
      const page = await openEditor(s, port, `proxy/${program.port}/`);
      const tab = await openEditor(s, port);
      await eventually(async () => (await linesOf(workspace, 'attach.log')).length === 1, 20_000);
      // The editor's tab closed, the program's page still open: a tab opened now is an attach
      // (were the page taken for a tab, it would be one beside it).
      await closeTab(tab);
      await eventually(async () => {
        const again = await openEditor(s, port);
        const attached = await eventually(async () => (await linesOf(workspace, 'attach.log')).length === 2, 3000).catch(() => false);
        await closeTab(again);
        return attached;
      }, 20_000);
      await closeTab(page);
      expect(await linesOf(workspace, 'attach.log')).toHaveLength(2);
    } finally {
      await program.stop();
    }
  }, 60_000);

  it('does not run a failed chain again when the editor crashes and restartPolicy starts it again; a restart does', async () => {
    const s = await service();
    const created = await s.request('POST', '/servers', { name: 'Crashes', restart_policy: 'Always' });
    expect(created.status).toBe(201);
    const { id, workspace_path: workspace } = created.body;
    await fs.writeFile(join(workspace, '.devcontainer.json'), JSON.stringify({
      onCreateCommand: 'echo try >> tries.log; exit 1',
      postStartCommand: 'echo start >> start.log',
    }));
    const started = await s.request('POST', `/servers/${id}/start`);
    expect(started.status).toBe(200);
    await eventually(async () => conditionOf(await statusOf(s, id), 'LifecycleCommands')?.reason === 'CommandFailed', 20_000);
    expect(await linesOf(workspace, 'tries.log')).toEqual(['try']);

    process.kill(started.body.data.pid, 'SIGKILL');
    await eventually(async () => {
      const record = await statusOf(s, id);
      return record.phase === 'Running' && typeof record.pid === 'number' && record.pid !== started.body.data.pid;
    }, 20_000);
    expect(await linesOf(workspace, 'tries.log')).toEqual(['try']);
    expect(await linesOf(workspace, 'start.log')).toEqual([]);

    expect((await s.request('POST', `/servers/${id}/restart`)).status).toBe(200);
    await eventually(async () => (await linesOf(workspace, 'tries.log')).length === 2, 20_000);
  }, 60_000);
});

/** Closes a tab and resolves once its connection is closed. */
async function closeTab(ws: WebSocket): Promise<void> {
  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  ws.close();
  await closed;
}

/** A tab of the editor (or, with a path, another page under its address): its WebSocket through the service's proxy, open. */
async function openEditor(s: TestService, port: number, path = ''): Promise<WebSocket> {
  const ws = new WebSocket(`${s.url.replace('http', 'ws')}/vscode/${port}/${path}`, { headers: { Origin: s.url } });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
  });
  return ws;
}
