// Launches, watches, finds and stops editor processes. Each editor runs detached in its own
// process group with its output going to files, so it outlives a controller restart.
import { mkdirSync } from 'node:fs';
import { editorEnvironment } from '../core/child-env.ts';
import { spawnDetached, type DetachedProcess, type ExitInfo } from '../core/supervisor.ts';
import { discoverEditors, verifyEditor, type DiscoveredEditor } from './ownership.ts';
import { isAlive, type ProcessIdentity } from '../core/procfs.ts';
import { stopEditor } from './stopping.ts';
import { processGroupUsage, type EditorUsage } from './usage.ts';

export type { ProcessIdentity } from '../core/procfs.ts';
export type { ExitInfo } from '../core/supervisor.ts';
export { discoverEditors, type DiscoveredEditor } from './ownership.ts';
export { stopAllEditors, stopEditor } from './stopping.ts';

export interface LaunchSpec {
  name: string;
  port: number;
  workspacePath: string;
  userDataDir: string;
  extensionsDir: string;
  configPath: string;
  stdoutPath: string;
  stderrPath: string;
}

/** Where an editor answers HTTP. The proxy, the health checks and refresh go there, never to an address of their own. */
export interface EditorEndpoint {
  host: string;
  port: number;
}

/**
 * The runtime's handle of one editor. Only the runtime looks inside it; the controller keeps
 * it, compares it and records it in status. For this runtime it is a process: pid and start time.
 */
export type EditorHandle = ProcessIdentity;

export interface LaunchedEditor {
  handle: EditorHandle;
  endpoint: EditorEndpoint;
}

/** The address editors of this runtime bind: loopback only, the proxy is the way in. */
export const EDITOR_HOST = '127.0.0.1';

export interface EditorRuntime {
  launch(spec: LaunchSpec): LaunchedEditor;
  /** Where an editor of this runtime that listens on `port` answers (a port read from status or a command line). */
  endpointOf(port: number): EditorEndpoint;
  /** CPU and memory of the editors, by handle; an editor gone meanwhile is left out. */
  usage(handles: EditorHandle[]): Promise<Map<EditorHandle, EditorUsage>>;
  isAlive(identity: ProcessIdentity): boolean;
  /**
   * For an editor this runtime launched and isAlive() calls dead: true while its exit (code and
   * signal) is not reported yet, as the kernel holds it as a zombie until Node.js reaps it.
   */
  exitPending(identity: ProcessIdentity): boolean;
  /** Starts watching a process this runtime did not launch (adopted after a restart). */
  watch(name: string, identity: ProcessIdentity): void;
  /**
   * The endpoint of the editor, when the handle is, right now, the editor this service launched
   * for server `name` (its /proc command line and environment say so); else undefined. The one
   * check behind every adoption, stop and refresh.
   */
  owns(name: string, identity: ProcessIdentity): { endpoint: EditorEndpoint | undefined } | undefined;
  /** Stops server `name`'s editor; false, and nothing signalled, when the identity is not that editor. */
  stop(name: string, identity: ProcessIdentity, graceMs: number): Promise<boolean>;
  discover(): DiscoveredEditor[];
  onExit(listener: (name: string, identity: ProcessIdentity, exit: ExitInfo) => void): void;
  dispose(): void;
}

export function editorArguments(spec: LaunchSpec): string[] {
  return [
    '--bind-addr', `${EDITOR_HOST}:${spec.port}`,
    '--auth', 'none',
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-workspace-trust',
    '--config', spec.configPath,
    '--user-data-dir', spec.userDataDir,
    '--extensions-dir', spec.extensionsDir,
    spec.workspacePath,
  ];
}

export class ProcessRuntime implements EditorRuntime {
  private readonly bin: string;
  /** Editors are recognised by `--user-data-dir` under this folder. */
  private readonly editorsDir: string;
  private readonly env: NodeJS.ProcessEnv;
  private readonly listeners: Array<(name: string, identity: ProcessIdentity, exit: ExitInfo) => void> = [];
  private readonly watched = new Map<number, { name: string; identity: ProcessIdentity }>();
  /**
   * Editors this runtime launched whose 'exit' event has not fired yet, by pid. They are its
   * own children, so provably the server's even while /proc is mid-exec (the command line of a
   * process that is exec'ing can read empty).
   */
  private readonly children = new Map<number, { name: string; identity: ProcessIdentity; port: number; process: DetachedProcess }>();
  private pollTimer: NodeJS.Timeout | undefined;

  constructor(options: { bin: string; editorsDir: string; env?: NodeJS.ProcessEnv; pollIntervalMs?: number }) {
    this.bin = options.bin;
    this.editorsDir = options.editorsDir;
    this.env = options.env ?? process.env;
    this.pollTimer = setInterval(() => this.pollAdopted(), options.pollIntervalMs ?? 500);
    this.pollTimer.unref();
  }

  launch(spec: LaunchSpec): LaunchedEditor {
    mkdirSync(spec.userDataDir, { recursive: true });
    mkdirSync(spec.extensionsDir, { recursive: true });
    // Files, not pipes, and not waited for: the editor keeps running and writing while the service restarts.
    const editor = spawnDetached({
      command: this.bin,
      args: editorArguments(spec),
      cwd: spec.workspacePath,
      env: editorEnvironment(this.env, spec.name),
      stdoutPath: spec.stdoutPath,
      stderrPath: spec.stderrPath,
      unref: true,
    });
    if (!editor) throw new Error(`could not start ${this.bin}: check that it exists and is executable`);
    const identity = editor.identity;
    this.children.set(identity.pid, { name: spec.name, identity, port: spec.port, process: editor });
    editor.onExit((exit) => {
      this.children.delete(identity.pid);
      this.emitExit(spec.name, identity, exit);
    });
    return { handle: identity, endpoint: this.endpointOf(spec.port) };
  }

  isAlive(identity: ProcessIdentity): boolean {
    return isAlive(identity);
  }

  exitPending(identity: ProcessIdentity): boolean {
    return this.children.has(identity.pid);
  }

  watch(name: string, identity: ProcessIdentity): void {
    this.watched.set(identity.pid, { name, identity });
  }

  endpointOf(port: number): EditorEndpoint {
    return { host: EDITOR_HOST, port };
  }

  usage(handles: EditorHandle[]): Promise<Map<EditorHandle, EditorUsage>> {
    return processGroupUsage(handles);
  }

  owns(name: string, identity: ProcessIdentity): { endpoint: EditorEndpoint | undefined } | undefined {
    const child = this.ownChild(name, identity);
    if (child) return isAlive(identity) ? { endpoint: this.endpointOf(child.port) } : undefined;
    const editor = verifyEditor(identity, name, this.editorsDir);
    return editor && { endpoint: editor.port === undefined ? undefined : this.endpointOf(editor.port) };
  }

  async stop(name: string, identity: ProcessIdentity, graceMs: number): Promise<boolean> {
    const child = this.ownChild(name, identity);
    if (!child) return stopEditor(name, identity, graceMs, this.editorsDir);
    await child.process.stop(graceMs);
    return true;
  }

  private ownChild(name: string, identity: ProcessIdentity) {
    const child = this.children.get(identity.pid);
    return child?.name === name && child.identity.startTicks === identity.startTicks ? child : undefined;
  }

  discover(): DiscoveredEditor[] {
    return discoverEditors(this.editorsDir);
  }

  onExit(listener: (name: string, identity: ProcessIdentity, exit: ExitInfo) => void): void {
    this.listeners.push(listener);
  }

  dispose(): void {
    clearInterval(this.pollTimer);
    this.pollTimer = undefined;
    this.listeners.length = 0;
    this.watched.clear();
    this.children.clear();
  }

  private emitExit(name: string, identity: ProcessIdentity, exit: ExitInfo): void {
    this.watched.delete(identity.pid);
    for (const listener of this.listeners) listener(name, identity, exit);
  }

  private pollAdopted(): void {
    for (const { name, identity } of [...this.watched.values()]) {
      if (!isAlive(identity)) this.emitExit(name, identity, { code: null, signal: null });
    }
  }
}
