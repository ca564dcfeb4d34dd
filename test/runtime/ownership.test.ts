// The runtime signals only the editor it launched for that very server: /proc must show the
// server's own folders and name, whatever pid and start time a caller hands it.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { httpHealth } from '../../src/runtime/health.ts';
import { processOf, processRef, ProcessWorkload } from '../../src/runtime/processes.ts';
import type { RuntimeRef } from '../../src/runtime/interface.ts';
import { identityOf, isAlive } from '../../src/core/procfs.ts';
import { DataLayout } from '../../src/workspace/layout.ts';
import { freePort } from '../helpers/net.ts';
import { eventually, killEditors, STUB_EDITOR } from '../helpers/service.ts';

let root: string;
let layout: DataLayout;
const runtimes: ProcessWorkload[] = [];
const strangers: ChildProcess[] = [];

/** A process runtime over the test's data folder; each one knows only what it started or adopted. */
function makeRuntime(): ProcessWorkload {
  const runtime = new ProcessWorkload({
    bin: STUB_EDITOR,
    layout,
    outputOf: (name) => {
      mkdirSync(join(root, 'logs'), { recursive: true });
      return { stdout: join(root, 'logs', `${name}.out`), stderr: join(root, 'logs', `${name}.err`) };
    },
  });
  runtimes.push(runtime);
  return runtime;
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'devbox-ownership-'));
  layout = new DataLayout(join(root, 'data'));
});
afterEach(async () => {
  for (const child of strangers.splice(0)) child.kill('SIGKILL');
  for (const runtime of runtimes.splice(0)) runtime.dispose();
  await killEditors(layout.dataDir);
  await rm(root, { recursive: true, force: true });
});

/** A process in a group of its own, with an editor's command line, that the runtime did not launch. */
function stranger(args: string[], env: NodeJS.ProcessEnv = {}): RuntimeRef {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', '--', ...args], { detached: true, stdio: 'ignore', env: { ...process.env, ...env } });
  strangers.push(child);
  return processRef(identityOf(child.pid!)!);
}

const alive = (ref: RuntimeRef) => isAlive(processOf(ref)!);

describe('the editor a server owns', () => {
  it('is the one launched for it: another server\'s editor or a stranger is never stopped in its name', async () => {
    const runtime = makeRuntime();
    const { ref: alpha, endpoint } = await runtime.start({ name: 'alpha', port: await freePort() });
    const forged = { ...alpha, startTicks: (alpha.startTicks as number) + 1 };
    // A runtime that did not start alpha (as after a restart) can tell only from /proc, which
    // shows the editor's command line once it has exec'd: it answers by then.
    expect(await httpHealth.waitReady(endpoint, Date.now() + 30_000, () => false)).toBe(true);
    const fresh = makeRuntime();
    expect(fresh.adopt('beta', alpha)).toBeUndefined();
    expect(fresh.adopt('alpha', forged)).toBeUndefined();
    expect(fresh.adopt('alpha', alpha)).toEqual({ endpoint: { host: '127.0.0.1', port: expect.any(Number) } });
    expect(runtime.state('beta', alpha)).toEqual({ state: 'foreign' });
    expect(runtime.adopt('beta', alpha)).toBeUndefined();
    expect(runtime.adopt('alpha', forged)).toBeUndefined();

    // The same command line without the name in the environment, or the name without the
    // command line, is not the editor either.
    const userDataDir = layout.editor('alpha').userDataDir;
    const copycat = stranger(['--user-data-dir', userDataDir]);
    const named = stranger([], { DEVBOX_SERVER_NAME: 'alpha' });
    for (const r of [runtime, makeRuntime()]) {
      expect(r.adopt('alpha', copycat)).toBeUndefined();
      expect(r.adopt('alpha', named)).toBeUndefined();
      expect(r.state('alpha', copycat)).toEqual({ state: 'foreign' });
      expect(r.state('alpha', named)).toEqual({ state: 'foreign' });
    }
    expect((await runtime.list()).map((e) => e.ref)).toEqual([alpha]);

    for (const r of [runtime, makeRuntime()]) {
      expect(await r.stop('beta', alpha, 500)).toBe(false);
      expect(await r.stop('alpha', copycat, 500)).toBe(false);
      expect(await r.stop('alpha', named, 500)).toBe(false);
      expect(await r.stop('alpha', forged, 500)).toBe(false);
    }
    expect([alive(alpha), alive(copycat), alive(named)]).toEqual([true, true, true]);

    expect(await runtime.stop('alpha', alpha, 500)).toBe(true);
    await eventually(() => !alive(alpha));
    expect([alive(copycat), alive(named)]).toEqual([true, true]);
  });
});
