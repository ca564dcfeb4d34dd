// Fakes for the controller's side effects (clock, editors, logs, extension installs), so the
// store, queue and reconciler can be unit-tested without sleeping, spawning or binding a port.
import type { Clock } from '../../src/core/clock.ts';
import type { ServerLogs } from '../../src/controller/context.ts';
import type { LogLevel } from '../../src/logs/entry.ts';
import type { ExtensionInstaller, InstallOutcome } from '../../src/extensions/installer.ts';
import {
  EditorNotPlaced,
  type EditorEndpoint, type EditorOutput, type EditorProblem, type EditorRuntime, type EditorState, type EditorUsage, type ExitInfo, type HealthResult, type MachineMemory,
  type RunningEditor, type RuntimeEvent, type RuntimeRef, type StartedEditor, type StartSpec,
} from '../../src/runtime/interface.ts';
import type { EditorStorage } from '../../src/runtime/editor-storage.ts';
import type { EditorWorkload } from '../../src/runtime/editor-workload.ts';
import type { EditorHealth } from '../../src/runtime/health.ts';
import { LocalStorage } from '../../src/runtime/process-storage.ts';
import { ensureWorkspace, type DataLayout } from '../../src/workspace/layout.ts';

/** A clock that moves only when told to; timers fire in order of their due time. */
export class FakeClock implements Clock {
  private time = 0;
  private nextId = 0;
  private readonly timers = new Map<number, { at: number; ms: number; fn: () => void }>();

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.nextId;
    this.timers.set(id, { at: this.time + ms, ms, fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** The delays of the timers still waiting, in the order they were set. */
  get pendingDelays(): number[] {
    return [...this.timers.values()].map((t) => t.ms);
  }

  /** Moves time forward, firing every timer that falls due on the way. */
  advance(ms: number): void {
    const target = this.time + ms;
    for (;;) {
      const due = [...this.timers.entries()].filter(([, t]) => t.at <= target).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.timers.delete(due[0]);
      this.time = due[1].at;
      due[1].fn();
    }
    this.time = target;
  }
}

interface FakeEditor {
  name: string;
  ref: RuntimeRef;
  port: number;
  /** Answers /healthz (set at start from FakeRuntime.answersHealth). */
  answers: boolean;
  /** Why it does not serve, as a cluster runtime would say (see setProblem). */
  problem?: EditorProblem;
  /** What it printed (print), and the log streams following it. */
  output?: EditorOutput[];
  readers?: Set<() => void>;
}

/**
 * Editors that exist only in memory, behind the runtime interface: no process is spawned and no
 * port is bound; /healthz is answered from memory. Storage is real (LocalStorage in the test's
 * data folder, with the given installer), so workspace, settings and extension steps act on
 * real files. References are `{kind: 'fake', id}`: opaque to the controller, as any runtime's.
 */
/**
 * One stand-in for both halves of a runtime and for the health checks: its storage is the process
 * runtime's (real folders on disk), its editors live in memory and answer /healthz when told.
 */
export class FakeRuntime extends LocalStorage implements EditorStorage, EditorWorkload, EditorHealth {
  readonly kind = 'fake';
  readonly launches: StartSpec[] = [];
  readonly stops: RuntimeRef[] = [];
  /** Set to make the next starts throw, like a missing editor binary. */
  launchError: Error | undefined;
  /** Clear to start editors that never answer /healthz, like one stuck starting. */
  answersHealth = true;
  /** Ports portIsFree() reports as held by a program the service does not manage. */
  readonly heldPorts = new Set<number>();
  /**
   * Set to have the platform take starts without placing them, as a cluster without room does:
   * start() throws EditorNotPlaced, and the request stands (list() and stop() see it) until a
   * start after this is cleared places it.
   */
  notPlaced: EditorProblem | undefined;
  /** Starts taken but not placed, by server name. */
  private readonly unplaced = new Map<string, FakeEditor>();
  private eventListeners: Array<(name: string, event: RuntimeEvent) => void> = [];
  /** Log streams waiting for an editor to start. */
  private readonly outputWaiters = new Set<() => void>();
  private readonly editors = new Map<number, FakeEditor>();
  /** Dead editors whose exit is not reported yet, as zombies before Node.js reaps them. */
  private readonly unreaped = new Map<number, FakeEditor>();
  private readonly exits = new Map<number, ExitInfo>();
  private listeners: Array<(name: string) => void> = [];
  private nextId = 40_000;

  constructor(layout: DataLayout, installer: ExtensionInstaller = new FakeInstaller()) {
    super(layout, installer);
  }

  /** This stand-in as a whole runtime, as the service is given one (its output a stream, as a cluster's). */
  asRuntime(): EditorRuntime {
    return { kind: this.kind, output: 'stream', storage: this, workload: this, health: this };
  }

  async portIsFree(port: number): Promise<boolean> {
    return !this.heldPorts.has(port);
  }

  async start(spec: StartSpec): Promise<StartedEditor> {
    if (this.launchError) throw this.launchError;
    // As the process runtime: a start makes the server's folders.
    await ensureWorkspace(this.layout, spec.name);
    this.launches.push(spec);
    // A request that stands is found again, not made twice.
    const standing = this.unplaced.get(spec.name);
    if (this.notPlaced) {
      if (!standing) this.unplaced.set(spec.name, { name: spec.name, ref: { kind: 'fake', id: this.nextId++ }, port: spec.port, answers: this.answersHealth });
      throw new EditorNotPlaced(this.notPlaced);
    }
    this.unplaced.delete(spec.name);
    const editor = standing ?? { name: spec.name, ref: { kind: 'fake', id: this.nextId++ }, port: spec.port, answers: this.answersHealth };
    this.editors.set(idOf(editor.ref)!, editor);
    for (const wake of [...this.outputWaiters]) wake();
    return { ref: editor.ref, endpoint: endpointOn(spec.port) };
  }

  /** The start of the server taken but not placed, if one stands. */
  unplacedOf(name: string): RuntimeRef | undefined {
    return this.unplaced.get(name)?.ref;
  }

  /** The server's live editor prints a line: its log stream (logs()) gives it, as a Pod's log would. */
  print(name: string, line: string, stream: EditorOutput['stream'] = 'stdout'): void {
    const editor = this.liveEditor(name);
    (editor.output ??= []).push({ stream, line });
    for (const wake of editor.readers ?? []) wake();
  }

  /**
   * Like a Pod's log, one editor at a time: since 'start', what the server's running editor has
   * printed, then what it prints; since 'now', only what it prints from now on; with no editor
   * running, the next one's from its start. Ends when that editor exits, or the signal aborts.
   * (Output files are the process runtime's; this runtime writes none.)
   */
  async *logs(name: string, options: { signal: AbortSignal; since?: 'now' | 'start' }): AsyncIterable<EditorOutput> {
    const { signal } = options;
    const running = () => [...this.editors.values()].find((e) => e.name === name);
    let editor = running();
    let at = editor && options.since !== 'start' ? editor.output?.length ?? 0 : 0;
    for (;;) {
      if (signal.aborted) return;
      if (editor) {
        const output = editor.output ?? [];
        while (at < output.length) yield output[at++];
        if (!this.editors.has(idOf(editor.ref)!)) return;
      }
      await new Promise<void>((resolve) => {
        const wake = () => {
          signal.removeEventListener('abort', wake);
          for (const e of this.editors.values()) e.readers?.delete(wake);
          this.outputWaiters.delete(wake);
          resolve();
        };
        signal.addEventListener('abort', wake, { once: true });
        if (editor) (editor.readers ??= new Set()).add(wake);
        else this.outputWaiters.add(wake);
      });
      editor ??= running();
    }
  }

  /** Says why the server's live editor does not serve (undefined: it is over), as a cluster runtime's watch would, and tells the listeners. */
  setProblem(name: string, problem: EditorProblem | undefined): void {
    this.liveEditor(name).problem = problem;
    for (const listener of this.listeners) listener(name);
  }

  /** Something the platform says about the server's editor (a Kubernetes event). */
  emitEvent(name: string, event: RuntimeEvent): void {
    for (const listener of this.eventListeners) listener(name, event);
  }

  /** Stops only the live editor started for that very name; records every stop done. */
  async stop(name: string, ref: RuntimeRef): Promise<boolean> {
    const standing = this.unplaced.get(name);
    if (standing && idOf(standing.ref) === idOf(ref)) {
      this.unplaced.delete(name);
      this.stops.push(standing.ref);
      return true;
    }
    const editor = this.editorOf(ref);
    if (editor?.name !== name) return false;
    this.stops.push(editor.ref);
    this.exit(editor, { code: null, signal: 'SIGTERM' });
    return true;
  }

  state(name: string, ref: RuntimeRef): EditorState {
    const id = idOf(ref);
    const editor = this.editorOf(ref) ?? (id === undefined ? undefined : this.unreaped.get(id));
    if (editor && editor.name !== name) return { state: 'foreign' };
    if (id !== undefined && this.editors.has(id)) {
      // An editor with a problem is not serving: starting, with the runtime's reason, as a Pod not Ready.
      return editor!.problem ? { state: 'starting', endpoint: endpointOn(editor!.port), problem: editor!.problem } : { state: 'running', endpoint: endpointOn(editor!.port) };
    }
    if (id !== undefined && this.unreaped.has(id)) return { state: 'exited', exit: undefined };
    const exit = id === undefined ? undefined : this.exits.get(id);
    return exit ? { state: 'exited', exit } : ref.kind === this.kind ? { state: 'gone' } : { state: 'foreign' };
  }

  adopt(name: string, ref: RuntimeRef): { endpoint: EditorEndpoint | undefined } | undefined {
    const editor = this.editorOf(ref);
    return editor?.name === name ? { endpoint: endpointOn(editor.port) } : undefined;
  }

  async list(): Promise<RunningEditor[]> {
    return [...this.editors.values(), ...this.unplaced.values()].map((e) => ({ name: e.name, port: e.port, ref: e.ref }));
  }

  async health(endpoint: EditorEndpoint, _timeoutMs?: number): Promise<HealthResult> {
    const editor = [...this.editors.values()].find((e) => e.port === endpoint.port);
    return editor?.answers ? { ok: true, state: 'alive' } : { ok: false, error: 'ECONNREFUSED' };
  }

  /** Ready at once when the editor answers; else false once the deadline passes (or it is cancelled by then). */
  async waitReady(endpoint: EditorEndpoint, deadline: number, _cancelled?: () => boolean): Promise<boolean> {
    if ((await this.health(endpoint)).ok) return true;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - Date.now())).unref());
    return false;
  }

  /** The memory the editors share: a machine of 6 GB; none (undefined), as a cluster's, when a test says so. */
  machine: MachineMemory | undefined = { totalMb: 6144, source: 'a fake runtime' };

  memory(): MachineMemory | undefined {
    return this.machine;
  }

  /** Every live editor idles at 1 % CPU and 10 MB. */
  async usage(refs: RuntimeRef[]): Promise<Map<RuntimeRef, EditorUsage>> {
    return new Map(refs.filter((r) => this.isAlive(r)).map((r) => [r, { cpuPercent: 1, memoryMb: 10, uptime: 1 }]));
  }

  onChange(listener: (name: string) => void): void {
    this.listeners.push(listener);
  }

  onEvent(listener: (name: string, event: RuntimeEvent) => void): void {
    this.eventListeners.push(listener);
  }

  /** Its view (the editors' folders and /proc) is read as asked: current at once. */
  async synced(): Promise<void> {}

  isAlive(ref: RuntimeRef): boolean {
    return this.editorOf(ref) !== undefined;
  }

  /** References of the editors of this server that are still alive. */
  alive(name: string): RuntimeRef[] {
    return [...this.editors.values()].filter((e) => e.name === name).map((e) => e.ref);
  }

  /** Whether the server's live editor answers /healthz on its port (what a browser would find). */
  answers(port: number): boolean {
    return [...this.editors.values()].some((e) => e.port === port && e.answers);
  }

  /** Makes the server's live editor die on its own, as a crash or an exit would. */
  async crash(name: string, exit: ExitInfo = { code: 1, signal: null }): Promise<RuntimeRef> {
    const editor = this.liveEditor(name);
    this.exit(editor, exit);
    return editor.ref;
  }

  /** Makes the server's live editor die without reporting its exit yet; `reap` reports it. */
  async die(name: string): Promise<RuntimeRef> {
    const editor = this.liveEditor(name);
    this.editors.delete(idOf(editor.ref)!);
    this.unreaped.set(idOf(editor.ref)!, editor);
    for (const wake of [...editor.readers ?? []]) wake();
    return editor.ref;
  }

  /** Reports the exit of an editor that `die` killed. */
  reap(ref: RuntimeRef, exit: ExitInfo): void {
    const editor = this.unreaped.get(idOf(ref)!);
    if (!editor) throw new Error(`editor ${JSON.stringify(ref)} is not waiting to be reaped`);
    this.unreaped.delete(idOf(ref)!);
    this.exits.set(idOf(ref)!, exit);
    for (const listener of this.listeners) listener(editor.name);
  }

  dispose(): void {
    this.listeners = [];
    this.eventListeners = [];
  }

  /** Forgets every editor. */
  async close(): Promise<void> {
    this.editors.clear();
    this.unplaced.clear();
    this.listeners = [];
  }

  private liveEditor(name: string): FakeEditor {
    const editor = [...this.editors.values()].find((e) => e.name === name);
    if (!editor) throw new Error(`no live editor for ${name}`);
    return editor;
  }

  private editorOf(ref: RuntimeRef): FakeEditor | undefined {
    const id = idOf(ref);
    return id === undefined ? undefined : this.editors.get(id);
  }

  private exit(editor: FakeEditor, exit: ExitInfo): void {
    const id = idOf(editor.ref)!;
    if (!this.editors.delete(id)) return;
    for (const wake of [...editor.readers ?? []]) wake();
    this.exits.set(id, exit);
    for (const listener of this.listeners) listener(editor.name);
  }
}

function idOf(ref: RuntimeRef): number | undefined {
  return ref.kind === 'fake' && typeof ref.id === 'number' ? ref.id : undefined;
}

function endpointOn(port: number): EditorEndpoint {
  return { host: '127.0.0.1', port };
}

/** Records what the reconciler tells the log hub. */
export class FakeLogs implements ServerLogs {
  readonly events: Array<{ name: string; level: LogLevel; message: string }> = [];
  readonly untracked: Array<{ name: string; remove?: boolean }> = [];
  private readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  track(): void {}

  event(name: string, level: LogLevel, message: string): void {
    this.events.push({ name, level, message });
  }

  async untrack(name: string, options?: { remove?: boolean }): Promise<void> {
    this.untracked.push({ name, remove: options?.remove });
  }
}

/** Installs nothing; answers from a table of outcomes (installed, no version, by default). */
export class FakeInstaller implements ExtensionInstaller {
  readonly calls: Array<{ extensionsDir: string; id: string }> = [];
  readonly uninstalls: Array<{ extensionsDir: string; id: string }> = [];
  readonly outcomes = new Map<string, InstallOutcome>();
  /** What each extensions folder holds: lower-case id → version. */
  readonly folders = new Map<string, Map<string, string | undefined>>();

  async install(target: { extensionsDir: string }, id: string): Promise<InstallOutcome> {
    this.calls.push({ extensionsDir: target.extensionsDir, id });
    const outcome = this.outcomes.get(id) ?? { ok: true };
    if (outcome.ok) this.folder(target.extensionsDir).set(id.replace(/@.*$/, '').toLowerCase(), outcome.version);
    return outcome;
  }

  async uninstall(target: { extensionsDir: string }, id: string): Promise<InstallOutcome> {
    this.uninstalls.push({ extensionsDir: target.extensionsDir, id });
    this.folder(target.extensionsDir).delete(id.toLowerCase());
    return { ok: true };
  }

  async installed(target: { extensionsDir: string }): Promise<Map<string, string | undefined>> {
    return new Map(this.folder(target.extensionsDir));
  }

  private folder(dir: string): Map<string, string | undefined> {
    if (!this.folders.has(dir)) this.folders.set(dir, new Map());
    return this.folders.get(dir)!;
  }
}
