// What the runtime conformance suites are given by a runtime's test file (a Harness: the runtime,
// what a test needs to look at it from outside, and the inputs it can reach), and the helpers the
// suites share.
import { expect } from 'vitest';
import { httpHealth } from '../../src/runtime/health.ts';
import type { EditorEndpoint, EditorRuntime, PopulateSource, RuntimeRef, StartedEditor } from '../../src/runtime/interface.ts';
import { nextCall } from '../helpers/wait.ts';

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
export function nextChange(runtime: EditorRuntime, name: string, timeoutMs = 15_000): Promise<[string]> {
  return nextCall<[string]>((listener) => {
    let listening = true;
    runtime.workload.onChange((changed) => listening && listener(changed));
    return () => (listening = false);
  }, (changed) => changed === name, timeoutMs);
}

/** The first line of the editor's output that `matches` accepts, read from its log stream. */
export async function logLine(runtime: EditorRuntime, name: string, since: 'now' | 'start', matches: RegExp, opened?: () => Promise<void>): Promise<string> {
  const stop = new AbortController();
  // A bound, not a wait: a Pod's start on a loaded one-node cluster can take longer than 15 s.
  const signal = AbortSignal.any([stop.signal, AbortSignal.timeout(60_000)]);
  const lines = runtime.workload.logs(name, { signal, since })[Symbol.asyncIterator]();
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

/** Starts server `name`'s editor on the harness's runtime and waits until it answers /healthz. */
export async function startReady(h: Harness, name: string): Promise<StartedEditor> {
  const started = await h.runtime.workload.start({ name, port: await h.port() });
  const ready = await httpHealth.waitReady(started.endpoint, Date.now() + h.readyTimeoutMs, () => false);
  expect(ready, `${name} answers /healthz within ${h.readyTimeoutMs} ms`).toBe(true);
  return started;
}

/** The editors the runtime's workload lists for server `name`. */
export async function editorsOf(runtime: EditorRuntime, name: string) {
  return (await runtime.workload.list()).filter((e) => e.name === name);
}
