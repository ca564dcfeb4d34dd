// The process runtime passes the runtime conformance suite with the stub editor (fast), and
// starts the real code-server from the cache when it is installed.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groupExists, identityOf, isAlive } from '../../src/core/procfs.ts';
import { CodeServerExtensionInstaller } from '../../src/extensions/installer.ts';
import { resolveEditorBinary } from '../../src/runtime/editor-binary.ts';
import { httpHealth } from '../../src/runtime/health.ts';
import { discoverEditors, processOf, processRef, processRuntime } from '../../src/runtime/processes.ts';
import type { RuntimeRef } from '../../src/runtime/interface.ts';
import { DataLayout } from '../../src/workspace/layout.ts';
import { stalledGitServer } from '../workspace/git-fixtures.ts';
import { freePort } from '../helpers/net.ts';
import { eventually, killEditors, STUB_EDITOR } from '../helpers/service.ts';
import { conformanceSources, type ConformanceSources } from './conformance-sources.ts';
import { answers, logLine, runtimeConformance, type Harness } from './conformance.ts';

let sources: ConformanceSources;

beforeAll(async () => {
  sources = await conformanceSources();
});
afterAll(async () => {
  await sources?.stop();
});

/** Below the machine's ephemeral ports, which freePort() gives. */
const EXITS_AT_START_PORT = 20_999;

/** A process runtime over a fresh data folder, launching `bin`. */
async function processHarness(bin: string, readyTimeoutMs: number): Promise<Harness> {
  const root = await fs.mkdtemp(join(tmpdir(), 'devbox-conformance-'));
  const layout = new DataLayout(join(root, 'data'));
  const make = () => processRuntime({
    bin,
    layout,
    env: { ...process.env, STUB_EXIT_ON_PORT: String(EXITS_AT_START_PORT) },
    installer: new CodeServerExtensionInstaller(bin),
    // As the log hub does: each server's output in its own folder, made before the editor starts.
    outputOf: (name) => {
      const dir = join(layout.logsDir, name);
      mkdirSync(dir, { recursive: true });
      return { stdout: join(dir, 'editor.out'), stderr: join(dir, 'editor.err') };
    },
    pollIntervalMs: 50,
  });
  const runtimes = [make()];
  const strangers: ChildProcess[] = [];
  const stalled = await stalledGitServer();
  const identity = (ref: RuntimeRef) => {
    const found = processOf(ref);
    if (!found) throw new Error(`not a process reference: ${JSON.stringify(ref)}`);
    return found;
  };

  const harness: Harness = {
    runtime: runtimes[0],
    async restart() {
      harness.runtime.workload.dispose();
      runtimes.push(make());
      harness.runtime = runtimes.at(-1)!;
      return harness.runtime;
    },
    port: freePort,
    exitsAtStartPort: EXITS_AT_START_PORT,
    // Nothing of it runs: neither the editor nor anything left in its process group.
    running: async (ref) => isAlive(identity(ref)) || groupExists(identity(ref).pid),
    async kill(ref) {
      process.kill(-identity(ref).pid, 'SIGKILL');
    },
    killSignal: 'SIGKILL',
    async stranger() {
      const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { detached: true, stdio: 'ignore' });
      strangers.push(child);
      return processRef(identityOf(child.pid!)!);
    },
    async workspaceFiles(name) {
      const workspace = layout.workspace(name);
      const files = new Map<string, string>();
      for (const entry of await fs.readdir(workspace, { recursive: true, withFileTypes: true }).catch(() => [])) {
        const path = join(entry.parentPath, entry.name).slice(workspace.length + 1);
        if (entry.isFile() && !path.startsWith('.git/')) files.set(path, await fs.readFile(join(workspace, path), 'utf8'));
      }
      return files;
    },
    async leftovers(name) {
      const workspace = layout.workspace(name);
      const found = await Promise.all([workspace, layout.editor(name).root].map((path) => fs.access(path).then(() => [path], () => [])));
      const beside = (await fs.readdir(dirname(workspace)).catch(() => [])).filter((e) => e.startsWith(`.${basename(workspace)}.`));
      const editors = discoverEditors(layout.editorsDir).filter((e) => e.name === name).map((e) => `editor pid ${e.identity.pid}`);
      return [...found.flat(), ...beside, ...editors];
    },
    sources: {
      git: sources.git,
      zip: sources.zip,
      stalledGit: { git: { url: stalled.url }, schemes: ['git'], timeoutMs: 60_000 },
      stalledGitReached: stalled.reached,
    },
    extension: { id: 'acme.tool', key: 'acme.tool' },
    readyTimeoutMs,
    async cleanup() {
      for (const runtime of runtimes) runtime.workload.dispose();
      await killEditors(layout.dataDir);
      for (const child of strangers) child.kill('SIGKILL');
      await stalled.close();
      await fs.rm(root, { recursive: true, force: true });
    },
  };
  return harness;
}

runtimeConformance('process runtime', () => processHarness(STUB_EDITOR, 10_000));

describe('the process runtime', () => {
  it('removes a clone folder that a service killed mid-clone left beside the workspace', async () => {
    const h = await processHarness(STUB_EDITOR, 10_000);
    try {
      const workspace = await h.runtime.storage.prepare('alpha');
      const leftover = join(dirname(workspace), `.${basename(workspace)}.clone-0badf00d`);
      await fs.mkdir(join(leftover, '.git'), { recursive: true });
      expect(await h.leftovers('alpha')).toContain(basename(leftover));
      await h.runtime.storage.remove('alpha');
      expect(await h.leftovers('alpha')).toEqual([]);
    } finally {
      await h.cleanup();
    }
  });
});

const realEditor = (() => {
  try {
    return resolveEditorBinary().path;
  } catch {
    return undefined;
  }
})();

describe.skipIf(!realEditor)('the process runtime with the real code-server', () => {
  it('starts it, sees it answer and log, and stops it leaving nothing running', async () => {
    const h = await processHarness(realEditor!, 60_000);
    try {
      const started = await h.runtime.workload.start({ name: 'real', port: await h.port() });
      expect(await httpHealth.waitReady(started.endpoint, Date.now() + h.readyTimeoutMs, () => false)).toBe(true);
      expect(await answers(started.endpoint)).toBe(true);
      expect(h.runtime.workload.state('real', started.ref)).toEqual({ state: 'running', endpoint: started.endpoint });
      expect(await logLine(h.runtime, 'real', 'start', /HTTP server listening on/)).toMatch(String(started.endpoint.port));
      const usage = await eventually(async () => (await h.runtime.workload.usage([started.ref])).get(started.ref));
      expect(usage.memoryMb).toBeGreaterThan(0);

      expect(await h.runtime.workload.stop('real', started.ref, 5000)).toBe(true);
      await eventually(async () => !(await h.running(started.ref)));
      expect(await answers(started.endpoint)).toBe(false);
      expect(await h.runtime.workload.list()).toEqual([]);
    } finally {
      await h.cleanup();
    }
  }, 120_000);
});
