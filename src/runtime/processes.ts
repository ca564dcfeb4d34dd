// The process runtime: each editor is a code-server process on this machine, detached in its own
// process group with its output going to files, so it outlives a controller restart. Its
// reference is the process identity (pid and start time, never a pid alone); an editor counts
// as a server's only when /proc says this service launched it for that very server.
import { promises as fs } from 'node:fs';
import { dirname } from 'node:path';
import { editorEnvironment } from '../core/child-env.ts';
import { isAlive, type ProcessIdentity } from '../core/procfs.ts';
import { BACKGROUND_MS, every, type Periodic } from '../core/ticks.ts';
import { spawnDetached, type DetachedProcess, type ExitInfo } from '../core/supervisor.ts';
import type { ExtensionInstaller } from '../extensions/installer.ts';
import { ensureWorkspace, type DataLayout } from '../workspace/layout.ts';
import { pause } from '../core/pause.ts';
import type { EditorWorkload, RunOptions } from './editor-workload.ts';
import type { CommandEnd, CommandLine, EditorEndpoint, EditorOutput, EditorRuntime, EditorState, RunningEditor, RuntimeRef, StartedEditor, StartSpec } from './interface.ts';
import { machineMemory, type MachineMemory } from './machine-memory.ts';
import { discoverEditors, verifyEditor } from './ownership.ts';
import { ListenerTable } from './listeners.ts';
import { Tail, type OutputFiles } from './output-tail.ts';
import { ProcessCommands } from './process-run.ts';
import { LocalStorage } from './process-storage.ts';
import { EDITOR_HOST, portIsFree } from './port-probe.ts';

export { EDITOR_HOST };
import { stopAllEditors, stopEditor } from './stopping.ts';
import { processGroupUsage, type EditorUsage } from './usage.ts';

export type { ProcessIdentity } from '../core/procfs.ts';
export type { ExitInfo } from '../core/supervisor.ts';
export type { EditorEndpoint } from './interface.ts';
export { discoverEditors, type DiscoveredEditor } from './ownership.ts';
export { stopAllEditors, stopEditor } from './stopping.ts';

/** What a code-server process is started with. */
export interface LaunchSpec {
  name: string;
  port: number;
  workspacePath: string;
  userDataDir: string;
  extensionsDir: string;
  configPath: string;
}


/** The most exits remembered for state() after the editor is gone. */
const EXITS_KEPT = 1024;
/** How often a log stream looks for new output in the files. */
const FOLLOW_MS = 100;

export function editorArguments(spec: LaunchSpec): string[] {
  return [
    '--bind-addr', `${EDITOR_HOST}:${spec.port}`,
    '--auth', 'none',
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-workspace-trust',
    // Its port proxy reaches any port of the machine: the service's proxy forwards a server's own ports instead.
    '--disable-proxy',
    '--config', spec.configPath,
    '--user-data-dir', spec.userDataDir,
    '--extensions-dir', spec.extensionsDir,
    spec.workspacePath,
  ];
}

/** The process identity a reference of this runtime names; undefined for any other reference. */
export function processOf(ref: RuntimeRef): ProcessIdentity | undefined {
  const { kind, pid, startTicks } = ref;
  return kind === 'process' && Number.isSafeInteger(pid) && (pid as number) > 1 && Number.isSafeInteger(startTicks) && (startTicks as number) >= 0
    ? { pid: pid as number, startTicks: startTicks as number }
    : undefined;
}

export function processRef(identity: ProcessIdentity): RuntimeRef {
  return { kind: 'process', pid: identity.pid, startTicks: identity.startTicks };
}

const keyOf = (identity: ProcessIdentity) => `${identity.pid}:${identity.startTicks}`;

interface Tracked {
  name: string;
  identity: ProcessIdentity;
  endpoint: EditorEndpoint | undefined;
  /** Set for editors launched in this run (our own children, provably the server's even mid-exec). */
  process?: DetachedProcess;
}

export interface ProcessRuntimeOptions {
  bin: string;
  layout: DataLayout;
  installer: ExtensionInstaller;
  /** Where each editor's output goes (the log hub's editor.out and editor.err). */
  outputOf: OutputFiles;
  env?: NodeJS.ProcessEnv;
  /** How often adopted editors (not our children) are looked at in /proc. */
  pollIntervalMs?: number;
}

/** The process runtime's two halves: the servers' folders on this machine, and code-server processes on them. */
export function processRuntime(options: ProcessRuntimeOptions): EditorRuntime & { storage: LocalStorage; workload: ProcessWorkload } {
  return {
    kind: 'process',
    output: 'files',
    storage: new LocalStorage(options.layout, options.installer),
    workload: new ProcessWorkload(options),
  };
}

/** The process runtime's workload half: each editor a detached code-server process, watched in /proc. */
export class ProcessWorkload implements EditorWorkload {
  readonly kind = 'process';
  readonly layout: DataLayout;
  readonly outputOf: OutputFiles;
  private readonly bin: string;
  private readonly env: NodeJS.ProcessEnv;
  private readonly listeners: Array<(name: string) => void> = [];
  /** Editors launched or adopted in this run that have not been seen to exit, by identity. */
  private readonly tracked = new Map<string, Tracked>();
  /** The tracked editors adopted (no child handle tells when they exit): what the poll looks at. */
  private readonly adopted = new Set<Tracked>();
  /** How tracked editors ended (code and signal, or nulls when an adopted one vanished), newest last. */
  private readonly exits = new Map<string, ExitInfo>();
  private poll: Periodic | undefined;
  /** Commands run beside the editors (process-run.ts), and what they left running. */
  private readonly commands: ProcessCommands;
  /** Who listens on the loopback's ports, for the proxy's forwarded ports (every editor here shares the loopback). */
  private readonly sockets = new ListenerTable();

  constructor(options: Omit<ProcessRuntimeOptions, 'installer'>) {
    this.layout = options.layout;
    this.outputOf = options.outputOf;
    this.bin = options.bin;
    this.env = options.env ?? process.env;
    this.commands = new ProcessCommands(this.env);
    this.poll = every(options.pollIntervalMs ?? BACKGROUND_MS, () => this.pollAdopted());
  }

  portIsFree(port: number): Promise<boolean> {
    return portIsFree(port);
  }

  async start(spec: StartSpec): Promise<StartedEditor> {
    const workspacePath = await ensureWorkspace(this.layout, spec.name);
    const editor = this.layout.editor(spec.name);
    const output = this.outputOf(spec.name);
    // The log hub leaves its folder to the first write into it: this one may be the first.
    for (const dir of new Set([dirname(output.stdout), dirname(output.stderr)])) await fs.mkdir(dir, { recursive: true });
    // Files, not pipes, and not waited for: the editor keeps running and writing while the service restarts.
    const child = spawnDetached({
      command: this.bin,
      args: editorArguments({ name: spec.name, port: spec.port, workspacePath, ...editor }),
      cwd: workspacePath,
      // devcontainer.json's variables over the service's cleaned environment; the server's name stays the service's (adoption reads it).
      env: { ...editorEnvironment(this.env), ...spec.env, ...editorEnvironment({}, spec.name) },
      stdoutPath: output.stdout,
      stderrPath: output.stderr,
      unref: true,
    });
    if (!child) throw new Error(`could not start ${this.bin}: check that it exists and is executable`);
    const identity = child.identity;
    const endpoint = this.endpointOf(spec.port);
    this.tracked.set(keyOf(identity), { name: spec.name, identity, endpoint, process: child });
    child.onExit((exit) => this.exited(identity, exit));
    return { ref: processRef(identity), endpoint };
  }

  /** Runs a command in the server's workspace with its editor's environment (process-run.ts); `ref` is not needed here. */
  run(name: string, _ref: RuntimeRef, command: CommandLine, options: RunOptions): Promise<CommandEnd> {
    return this.commands.run(name, command, options);
  }

  async stop(name: string, ref: RuntimeRef, graceMs: number): Promise<boolean> {
    const identity = processOf(ref);
    if (!identity) return false;
    // What its commands left running goes with the editor, as with a container's.
    await this.commands.stop(name);
    const child = this.ownChild(name, identity);
    if (!child) return stopEditor(name, identity, graceMs, this.layout.editorsDir);
    await child.stop(graceMs);
    return true;
  }

  state(name: string, ref: RuntimeRef): EditorState {
    const identity = processOf(ref);
    if (!identity) return { state: 'foreign' };
    const key = keyOf(identity);
    const tracked = this.tracked.get(key);
    if (tracked && tracked.name !== name) return { state: 'foreign' };
    const exit = this.exits.get(key);
    if (exit) return { state: 'exited', exit };
    if (isAlive(identity)) {
      if (tracked) return { state: 'running', endpoint: tracked.endpoint };
      const editor = verifyEditor(identity, name, this.layout.editorsDir);
      return editor ? { state: 'running', endpoint: this.endpointFor(editor.port) } : { state: 'foreign' };
    }
    // Dead: our own child's exit (code and signal) is moments away, as the kernel holds it as a
    // zombie until Node.js reaps it; anything else is gone.
    return tracked?.process ? { state: 'exited', exit: undefined } : { state: 'gone' };
  }

  adopt(name: string, ref: RuntimeRef, port?: number): { endpoint: EditorEndpoint | undefined } | undefined {
    const identity = processOf(ref);
    if (!identity) return undefined;
    const key = keyOf(identity);
    const tracked = this.tracked.get(key);
    if (tracked) {
      if (tracked.name !== name || !isAlive(identity)) return undefined;
      tracked.endpoint ??= this.endpointFor(port);
      return { endpoint: tracked.endpoint };
    }
    const editor = verifyEditor(identity, name, this.layout.editorsDir);
    if (!editor) return undefined;
    const endpoint = this.endpointFor(editor.port ?? port);
    this.exits.delete(key);
    const adopted: Tracked = { name, identity, endpoint };
    this.tracked.set(key, adopted);
    this.adopted.add(adopted);
    return { endpoint };
  }

  async list(): Promise<RunningEditor[]> {
    return discoverEditors(this.layout.editorsDir).map((e) => ({ name: e.name, port: e.port, ref: processRef(e.identity) }));
  }

  /** Follows the editor's output files: what is in them (since 'start') or only what comes next. */
  async *logs(name: string, options: { signal: AbortSignal; since?: 'now' | 'start' }): AsyncIterable<EditorOutput> {
    const files = this.outputOf(name);
    const tails = [new Tail(files.stdout, 'stdout'), new Tail(files.stderr, 'stderr')];
    if (options.since !== 'start') for (const tail of tails) await tail.skipToEnd();
    while (!options.signal.aborted) {
      let any = false;
      for (const tail of tails) {
        for (const line of await tail.read()) {
          any = true;
          yield { stream: tail.stream, line };
        }
      }
      if (!any) await pause(FOLLOW_MS, options.signal);
    }
  }

  /** This machine's memory, or its container's. */
  memory(): MachineMemory {
    return machineMemory();
  }

  async usage(refs: RuntimeRef[]): Promise<Map<RuntimeRef, EditorUsage>> {
    const byIdentity = new Map<ProcessIdentity, RuntimeRef>();
    for (const ref of refs) {
      const identity = processOf(ref);
      if (identity) byIdentity.set(identity, ref);
    }
    const usage = await processGroupUsage([...byIdentity.keys()]);
    return new Map([...usage].map(([identity, sample]) => [byIdentity.get(identity)!, sample]));
  }

  onChange(listener: (name: string) => void): void {
    this.listeners.push(listener);
  }

  /** Local processes have no platform to speak about them. */
  onEvent(): void {}

  /** Its view (the editors' folders and /proc) is read as asked: current at once. */
  async synced(): Promise<void> {}

  /** Every editor of this data folder, tracked or not (/proc says which are ours). */
  async stopStrays(graceMs: number): Promise<void> {
    await stopAllEditors(this.layout.editorsDir, graceMs);
  }

  dispose(): void {
    this.poll?.stop();
    this.poll = undefined;
    this.listeners.length = 0;
    this.tracked.clear();
    this.adopted.clear();
  }

  /** Whether the program listening on the port is one of server `name`'s (its DEVBOX_SERVER_NAME), another's, or none. */
  listenerOf(name: string, port: number): Promise<'this' | 'other' | 'none'> {
    return this.sockets.of(name, port);
  }

  /** The loopback ports server `name`'s programs listen on now, its editor's own among them. */
  portsOf(name: string): Promise<number[]> {
    return this.sockets.portsOf(name);
  }

  /** Where an editor of this runtime listening on `port` answers. */
  endpointOf(port: number): EditorEndpoint {
    return { host: EDITOR_HOST, port };
  }

  private endpointFor(port: number | undefined): EditorEndpoint | undefined {
    return port === undefined ? undefined : this.endpointOf(port);
  }

  private ownChild(name: string, identity: ProcessIdentity): DetachedProcess | undefined {
    const tracked = this.tracked.get(keyOf(identity));
    return tracked?.name === name ? tracked.process : undefined;
  }

  private exited(identity: ProcessIdentity, exit: ExitInfo): void {
    const key = keyOf(identity);
    const tracked = this.tracked.get(key);
    if (!tracked) return;
    this.tracked.delete(key);
    this.adopted.delete(tracked);
    this.exits.set(key, exit);
    if (this.exits.size > EXITS_KEPT) this.exits.delete(this.exits.keys().next().value!);
    for (const listener of this.listeners) listener(tracked.name);
  }

  private pollAdopted(): void {
    for (const { identity } of [...this.adopted]) if (!isAlive(identity)) this.exited(identity, { code: null, signal: null });
  }
}
