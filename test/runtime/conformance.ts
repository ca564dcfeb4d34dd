// The behaviour every editor runtime must show, whatever runs the editors (local processes, Pods):
// one suite, run unchanged against each runtime. A runtime's test file supplies a Harness: the
// runtime, what a test needs to look at it from outside, and the inputs it can reach.
import { beforeEach, afterEach, describe, expect, it } from 'vitest';
import { sameRef, type EditorEndpoint, type EditorRuntime, type PopulateSource, type RuntimeRef, type StartedEditor } from '../../src/runtime/interface.ts';
import { eventually, nextCall } from '../helpers/wait.ts';

type GitSource = Extract<PopulateSource, { git: unknown }>;
type ArchiveSource = Extract<PopulateSource, { archive: unknown }>;

/** A workspace source and one file it puts into the workspace, with its content. */
export interface SourceFixture<S> {
  source: S;
  file: string;
  content: string;
}

export interface Harness {
  /** The runtime under test: nothing of this harness runs or is stored yet. */
  runtime: EditorRuntime;
  /**
   * A controller restart: disposes the current runtime (its editors keep running) and returns a
   * new instance over the same storage, which becomes `runtime`.
   */
  restart(): Promise<EditorRuntime>;
  /** A route number to start an editor on. */
  port(): Promise<number>;
  /**
   * A route number on which the editor prints why it cannot start (on stderr and stdout) and
   * exits with code 1 before it listens (the stub editor's STUB_EXIT_ON_PORT); port() never gives it.
   */
  exitsAtStartPort: number;
  /** True while anything of the editor under `ref` still runs (its processes, its Pod). */
  running(ref: RuntimeRef): Promise<boolean>;
  /** Kills the editor from outside the runtime, as a crash or the OOM killer would. */
  kill(ref: RuntimeRef): Promise<void>;
  /** The signal state() reports for an editor `kill` ended. */
  killSignal: string;
  /** A reference to something that runs but was never started by any runtime (running() is true for it). */
  stranger(): Promise<RuntimeRef>;
  /** Every file in the server's workspace (the one its editor opens): relative path → content. */
  workspaceFiles(name: string): Promise<Map<string, string>>;
  /** What is still kept or running for the server, in words (paths, object names); empty when nothing is. */
  leftovers(name: string): Promise<string[]>;
  sources: {
    git: SourceFixture<GitSource>;
    zip: SourceFixture<ArchiveSource>;
    /** A git source whose server never answers: its clone runs until aborted. */
    stalledGit: GitSource;
    /** Resolves once a clone of stalledGit reached its server (the populate is under way). */
    stalledGitReached(): Promise<void>;
  };
  /** An extension that installs without the network: the id given to installExtension, and the key installedExtensions lists. */
  extension: { id: string; key: string };
  /** How long an editor may take to answer /healthz after start. */
  readyTimeoutMs: number;
  /** Stops everything the harness and its runtimes started, and removes what they stored. */
  cleanup(): Promise<void>;
}

/** True when the editor answers GET /healthz at its endpoint. */
export async function answers(endpoint: EditorEndpoint): Promise<boolean> {
  try {
    const res = await fetch(`http://${endpoint.host}:${endpoint.port}/healthz`, { signal: AbortSignal.timeout(2000) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

/** Resolves once `runtime` reports a change for server `name`. */
function nextChange(runtime: EditorRuntime, name: string, timeoutMs = 15_000): Promise<[string]> {
  return nextCall<[string]>((listener) => {
    let listening = true;
    runtime.onChange((changed) => listening && listener(changed));
    return () => (listening = false);
  }, (changed) => changed === name, timeoutMs);
}

/** The first line of the editor's output that `matches` accepts, read from its log stream. */
export async function logLine(runtime: EditorRuntime, name: string, since: 'now' | 'start', matches: RegExp, opened?: () => Promise<void>): Promise<string> {
  const stop = new AbortController();
  // A bound, not a wait: a Pod's start on a loaded one-node cluster can take longer than 15 s.
  const signal = AbortSignal.any([stop.signal, AbortSignal.timeout(60_000)]);
  const lines = runtime.logs(name, { signal, since })[Symbol.asyncIterator]();
  // The first read opens the stream (since 'now' begins there); only then may the output come.
  const first = lines.next();
  await opened?.();
  try {
    for (let next = await first; !next.done; next = await lines.next()) {
      if (matches.test(next.value.line)) return next.value.line;
    }
    throw new Error(`the log stream of ${name} ended without a line matching ${matches}`);
  } finally {
    stop.abort();
    await lines.return?.();
  }
}

export function runtimeConformance(label: string, setup: () => Promise<Harness>): void {
  describe(`${label}: runtime conformance`, () => {
    let h: Harness;

    beforeEach(async () => {
      h = await setup();
    });
    afterEach(async () => {
      await h?.cleanup();
    });

    async function startReady(name: string): Promise<StartedEditor> {
      const started = await h.runtime.start({ name, port: await h.port() });
      const ready = await h.runtime.waitReady(started.endpoint, Date.now() + h.readyTimeoutMs, () => false);
      expect(ready, `${name} answers /healthz within ${h.readyTimeoutMs} ms`).toBe(true);
      return started;
    }

    const editorsOf = async (runtime: EditorRuntime, name: string) => (await runtime.list()).filter((e) => e.name === name);

    it('starts an editor that answers at its endpoint, and stops it leaving nothing running', async () => {
      const started = await h.runtime.start({ name: 'alpha', port: await h.port() });
      expect(['starting', 'running']).toContain(h.runtime.state('alpha', started.ref).state);
      expect(JSON.parse(JSON.stringify(started.ref)), 'the reference is serialisable').toEqual(started.ref);
      expect(await h.runtime.waitReady(started.endpoint, Date.now() + h.readyTimeoutMs, () => false)).toBe(true);
      expect(await answers(started.endpoint)).toBe(true);
      await eventually(() => h.runtime.state('alpha', started.ref).state === 'running');
      expect(h.runtime.state('alpha', started.ref)).toEqual({ state: 'running', endpoint: started.endpoint });
      expect(await h.running(started.ref)).toBe(true);
      expect((await editorsOf(h.runtime, 'alpha')).map((e) => e.ref)).toEqual([started.ref]);

      expect(await h.runtime.stop('alpha', started.ref, 2000)).toBe(true);
      await eventually(async () => !(await h.running(started.ref)));
      expect(await answers(started.endpoint)).toBe(false);
      await eventually(() => ['exited', 'gone'].includes(h.runtime.state('alpha', started.ref).state));
      expect(await editorsOf(h.runtime, 'alpha')).toEqual([]);
    });

    it('adopts a running editor after a controller restart, without a second one', async () => {
      const started = await startReady('alpha');
      const runtime = await h.restart();
      expect(await h.running(started.ref), 'the editor outlives the runtime that started it').toBe(true);

      const listed = await editorsOf(runtime, 'alpha');
      expect(listed).toHaveLength(1);
      expect(sameRef(listed[0].ref, started.ref)).toBe(true);
      expect(runtime.adopt('beta', started.ref), "another server's name adopts nothing").toBeUndefined();
      expect(runtime.adopt('alpha', started.ref)).toEqual({ endpoint: started.endpoint });
      expect(runtime.state('alpha', started.ref)).toEqual({ state: 'running', endpoint: started.endpoint });
      expect(await answers(started.endpoint)).toBe(true);
      expect(await editorsOf(runtime, 'alpha')).toHaveLength(1);

      expect(await runtime.stop('alpha', started.ref, 2000)).toBe(true);
      await eventually(async () => !(await h.running(started.ref)));
      expect(await editorsOf(runtime, 'alpha')).toEqual([]);
    });

    it("never stops a stranger, or another server's editor, in a server's name", async () => {
      const alpha = await startReady('alpha');
      const stranger = await h.stranger();
      const forged = { kind: 'no-such-runtime', id: 'x' };
      for (const when of ['in the run that started it', 'after a restart']) {
        const runtime = when === 'after a restart' ? await h.restart() : h.runtime;
        expect(runtime.state('alpha', stranger), when).toEqual({ state: 'foreign' });
        expect(runtime.state('beta', alpha.ref), when).toEqual({ state: 'foreign' });
        expect(runtime.state('alpha', forged), when).toEqual({ state: 'foreign' });
        expect(runtime.adopt('alpha', stranger), when).toBeUndefined();
        expect(await runtime.stop('alpha', stranger, 500), when).toBe(false);
        expect(await runtime.stop('beta', alpha.ref, 500), when).toBe(false);
        expect(await runtime.stop('alpha', forged, 500), when).toBe(false);
        expect(await h.running(stranger), when).toBe(true);
        expect(await h.running(alpha.ref), when).toBe(true);
        expect(await answers(alpha.endpoint), when).toBe(true);
      }
    });

    it('sees an editor killed from outside and reports its name and the signal', async () => {
      const started = await startReady('alpha');
      const changed = nextChange(h.runtime, 'alpha');
      await h.kill(started.ref);
      expect(await changed).toEqual(['alpha']);
      const state = await eventually(() => {
        const s = h.runtime.state('alpha', started.ref);
        return s.state === 'exited' && s.exit !== undefined && s;
      });
      expect(state).toMatchObject({ state: 'exited', exit: { signal: h.killSignal } });
      await eventually(async () => !(await h.running(started.ref)));
    });

    it('reports an editor that exits with code 1 at its start as exited with that code, and streams what it said', async () => {
      const port = h.exitsAtStartPort;
      const started = await h.runtime.start({ name: 'alpha', port });
      const state = await eventually(() => {
        const s = h.runtime.state('alpha', started.ref);
        return s.state === 'exited' && s.exit !== undefined && s;
      }, h.readyTimeoutMs);
      expect(state).toMatchObject({ state: 'exited', exit: { code: 1, signal: null } });
      expect(await logLine(h.runtime, 'alpha', 'start', /cannot start/)).toBe(`[stub] cannot start on port ${port}: exiting with code 1 on purpose`);
      await eventually(async () => !(await h.running(started.ref)));
      expect(await editorsOf(h.runtime, 'alpha')).toEqual([]);
      expect(h.runtime.adopt('alpha', started.ref), 'an editor that ended is not adopted').toBeUndefined();
    });

    it('sees an adopted editor killed from outside', async () => {
      const started = await startReady('alpha');
      const runtime = await h.restart();
      expect(runtime.adopt('alpha', started.ref)).toBeDefined();
      const changed = nextChange(runtime, 'alpha');
      await h.kill(started.ref);
      expect(await changed).toEqual(['alpha']);
      expect(runtime.state('alpha', started.ref).state).toBe('exited');
    });

    it("reports a running editor's CPU and memory, and none once it is stopped", async () => {
      const started = await startReady('alpha');
      const usage = await eventually(async () => (await h.runtime.usage([started.ref])).get(started.ref));
      expect(usage.memoryMb).toBeGreaterThan(0);
      expect(Number.isFinite(usage.cpuPercent)).toBe(true);
      await h.runtime.stop('alpha', started.ref, 2000);
      await eventually(async () => !(await h.runtime.usage([started.ref])).has(started.ref));
    });

    it("streams the editor's output: what it printed since start, and what it prints next", async () => {
      const first = await startReady('alpha');
      expect(await logLine(h.runtime, 'alpha', 'start', /HTTP server listening on/)).toMatch(String(first.endpoint.port));
      await h.runtime.stop('alpha', first.ref, 2000);

      // Opened before the next start: only that start's output is new.
      let second: StartedEditor | undefined;
      const port = await h.port();
      const line = await logLine(h.runtime, 'alpha', 'now', /HTTP server listening on/, async () => {
        second = await h.runtime.start({ name: 'alpha', port });
      });
      expect(line).toMatch(String(port));
      await h.runtime.stop('alpha', second!.ref, 2000);
    });

    it('clones a git source into the workspace the editor opens, only while it is empty', async () => {
      const { git } = h.sources;
      await h.runtime.prepare('alpha');
      expect(await h.runtime.workspaceEmpty('alpha')).toBe(true);
      await h.runtime.populate('alpha', git.source, new AbortController().signal);
      expect((await h.workspaceFiles('alpha')).get(git.file)).toBe(git.content);
      expect(await h.runtime.workspaceEmpty('alpha')).toBe(false);

      await expect(h.runtime.populate('alpha', h.sources.zip.source, new AbortController().signal)).rejects.toThrow();
      expect((await h.workspaceFiles('alpha')).has(h.sources.zip.file)).toBe(false);
      await startReady('alpha');
      expect((await h.workspaceFiles('alpha')).get(git.file), 'starting the editor keeps the files').toBe(git.content);
    });

    it('extracts a ZIP source into the workspace', async () => {
      const { zip } = h.sources;
      await h.runtime.prepare('alpha');
      const outcome = await h.runtime.populate('alpha', zip.source, new AbortController().signal);
      expect(outcome.entries).toBeGreaterThan(0);
      expect((await h.workspaceFiles('alpha')).get(zip.file)).toBe(zip.content);
      await startReady('alpha');
      expect((await h.workspaceFiles('alpha')).get(zip.file)).toBe(zip.content);
    });

    it('leaves the workspace empty when a populate is aborted mid-way, ready for the next one', async () => {
      await h.runtime.prepare('alpha');
      const abort = new AbortController();
      const populating = h.runtime.populate('alpha', h.sources.stalledGit, abort.signal);
      const settled = populating.then(() => 'resolved', () => 'rejected');
      await h.sources.stalledGitReached();
      abort.abort();
      expect(await settled).toBe('rejected');
      expect(await h.runtime.workspaceEmpty('alpha')).toBe(true);
      expect(await h.workspaceFiles('alpha')).toEqual(new Map());

      await h.runtime.populate('alpha', h.sources.zip.source, new AbortController().signal);
      expect((await h.workspaceFiles('alpha')).get(h.sources.zip.file)).toBe(h.sources.zip.content);
    });

    it('writes settings and the applied record, and reads them back across editor and controller restarts', async () => {
      await h.runtime.prepare('alpha');
      expect(await h.runtime.readSettings('alpha')).toBeUndefined();
      expect(await h.runtime.readAppliedSettings('alpha')).toBeUndefined();
      const settings = '{\n  "editor.fontSize": 15,\n  // a comment the user wrote\n  "files.autoSave": "off"\n}\n';
      const applied = '{"editor.fontSize":15}';
      await h.runtime.writeSettings('alpha', settings);
      await h.runtime.writeAppliedSettings('alpha', applied);
      expect(await h.runtime.readSettings('alpha')).toBe(settings);
      expect(await h.runtime.readAppliedSettings('alpha')).toBe(applied);
      expect(await h.runtime.readSettings('beta'), "one server's settings are not another's").toBeUndefined();

      const started = await startReady('alpha');
      await h.runtime.stop('alpha', started.ref, 2000);
      const runtime = await h.restart();
      expect(await runtime.readSettings('alpha')).toBe(settings);
      expect(await runtime.readAppliedSettings('alpha')).toBe(applied);

      await runtime.writeSettings('alpha', '{}\n');
      expect(await runtime.readSettings('alpha'), 'a write replaces the file').toBe('{}\n');
      expect(await runtime.readAppliedSettings('alpha')).toBe(applied);
    });

    it('installs an extension into the server and removes it again', async () => {
      const { id, key } = h.extension;
      await h.runtime.prepare('alpha');
      await h.runtime.prepare('beta');
      expect((await h.runtime.installedExtensions('alpha')).has(key)).toBe(false);

      const installed = await h.runtime.installExtension('alpha', id, new AbortController().signal);
      expect(installed.ok, installed.message).toBe(true);
      expect((await h.runtime.installedExtensions('alpha')).has(key)).toBe(true);
      expect((await h.runtime.installedExtensions('beta')).has(key), 'only into that server').toBe(false);

      const removed = await h.runtime.uninstallExtension('alpha', key, new AbortController().signal);
      expect(removed.ok, removed.message).toBe(true);
      expect((await h.runtime.installedExtensions('alpha')).has(key)).toBe(false);
    });

    it("removes everything a server has, and nothing of another server's", async () => {
      await h.runtime.prepare('beta');
      await h.runtime.writeSettings('beta', '{}\n');
      await h.runtime.prepare('alpha');
      await h.runtime.populate('alpha', h.sources.zip.source, new AbortController().signal);
      await h.runtime.writeSettings('alpha', '{"a":1}\n');
      await h.runtime.writeAppliedSettings('alpha', '{"a":1}');
      expect((await h.runtime.installExtension('alpha', h.extension.id, new AbortController().signal)).ok).toBe(true);
      const started = await startReady('alpha');
      await h.runtime.stop('alpha', started.ref, 2000);
      await eventually(async () => !(await h.running(started.ref)));
      expect(await h.leftovers('alpha')).not.toEqual([]);

      await h.runtime.remove('alpha');
      expect(await h.leftovers('alpha')).toEqual([]);
      expect(await h.runtime.workspaceEmpty('alpha')).toBe(true);
      expect(await h.runtime.readSettings('alpha')).toBeUndefined();
      expect(await h.runtime.readAppliedSettings('alpha')).toBeUndefined();
      expect(await h.runtime.installedExtensions('alpha')).toEqual(new Map());
      expect(await editorsOf(h.runtime, 'alpha')).toEqual([]);
      expect(await h.runtime.readSettings('beta')).toBe('{}\n');
    });
  });
}
