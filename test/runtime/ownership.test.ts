// The runtime signals only the editor it launched for that very server: /proc must show the
// server's own folders and name, whatever pid and start time a caller hands it.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ProcessRuntime } from '../../src/runtime/processes.ts';
import { identityOf, isAlive, type ProcessIdentity } from '../../src/core/procfs.ts';
import { DataLayout } from '../../src/workspace/layout.ts';
import { freePort } from '../helpers/net.ts';
import { eventually, killEditors, STUB_EDITOR } from '../helpers/service.ts';

let root: string;
let layout: DataLayout;
let runtime: ProcessRuntime;
const strangers: ChildProcess[] = [];

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'devbox-ownership-'));
  layout = new DataLayout(join(root, 'data'));
  runtime = new ProcessRuntime({ bin: STUB_EDITOR, editorsDir: layout.editorsDir });
});
afterEach(async () => {
  for (const child of strangers.splice(0)) child.kill('SIGKILL');
  runtime.dispose();
  await killEditors(layout.dataDir);
  await rm(root, { recursive: true, force: true });
});

async function launch(name: string): Promise<ProcessIdentity> {
  const editor = layout.editor(name);
  return runtime.launch({
    name, port: await freePort(), workspacePath: root, ...editor,
    stdoutPath: join(root, `${name}.out`), stderrPath: join(root, `${name}.err`),
  }).handle;
}

/** A process in a group of its own, with an editor's command line, that the runtime did not launch. */
function stranger(args: string[], env: NodeJS.ProcessEnv = {}): ProcessIdentity {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', '--', ...args], { detached: true, stdio: 'ignore', env: { ...process.env, ...env } });
  strangers.push(child);
  return identityOf(child.pid!)!;
}

describe('the editor a server owns', () => {
  it('is the one launched for it: another server\'s editor or a stranger is never stopped in its name', async () => {
    const alpha = await launch('alpha');
    expect(runtime.owns('alpha', alpha)).toEqual({ endpoint: { host: '127.0.0.1', port: expect.any(Number) } });
    expect(runtime.owns('beta', alpha)).toBeUndefined();
    expect(runtime.owns('alpha', { ...alpha, startTicks: alpha.startTicks + 1 })).toBeUndefined();

    // The same command line without the name in the environment, or the name without the
    // command line, is not the editor either.
    const userDataDir = layout.editor('alpha').userDataDir;
    const copycat = stranger(['--user-data-dir', userDataDir]);
    const named = stranger([], { DEVBOX_SERVER_NAME: 'alpha' });
    expect(runtime.owns('alpha', copycat)).toBeUndefined();
    expect(runtime.owns('alpha', named)).toBeUndefined();
    expect(runtime.discover().map((e) => e.identity)).toEqual([alpha]);

    expect(await runtime.stop('beta', alpha, 500)).toBe(false);
    expect(await runtime.stop('alpha', copycat, 500)).toBe(false);
    expect(await runtime.stop('alpha', named, 500)).toBe(false);
    expect([isAlive(alpha), isAlive(copycat), isAlive(named)]).toEqual([true, true, true]);

    expect(await runtime.stop('alpha', alpha, 500)).toBe(true);
    await eventually(() => !isAlive(alpha));
    expect([isAlive(copycat), isAlive(named)]).toEqual([true, true]);
  });
});
