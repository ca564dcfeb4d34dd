// Fakes for the controller's side effects (clock, editor processes, logs, extension installs),
// so the store, queue and reconciler can be unit-tested without sleeping or spawning.
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { Clock } from '../../src/core/clock.ts';
import type { LogLevel, ServerLogs } from '../../src/controller/reconciler.ts';
import type { ExtensionInstaller, InstallOutcome } from '../../src/extensions/installer.ts';
import type { DiscoveredEditor, EditorEndpoint, EditorRuntime, ExitInfo, LaunchedEditor, LaunchSpec, ProcessIdentity } from '../../src/runtime/processes.ts';
import type { EditorUsage } from '../../src/runtime/usage.ts';

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

interface FakeProcess {
  name: string;
  identity: ProcessIdentity;
  spec: LaunchSpec;
  health?: Server;
}

type ExitListener = (name: string, identity: ProcessIdentity, exit: ExitInfo) => void;

/**
 * Editor processes that exist only in memory. Each launched "editor" answers GET /healthz on
 * its port for real (the reconciler probes it over HTTP), until it is stopped or crashes.
 */
export class FakeRuntime implements EditorRuntime {
  readonly launches: LaunchSpec[] = [];
  readonly stops: ProcessIdentity[] = [];
  /** Set to make the next launches throw, like a missing editor binary. */
  launchError: Error | undefined;
  /** Clear to launch editors that never answer /healthz, like one stuck starting. */
  answersHealth = true;
  private readonly processes = new Map<number, FakeProcess>();
  /** Dead editors whose exit is not reported yet, as zombies before Node.js reaps them. */
  private readonly unreaped = new Map<number, FakeProcess>();
  private listeners: ExitListener[] = [];
  private nextPid = 40_000;

  launch(spec: LaunchSpec): LaunchedEditor {
    if (this.launchError) throw this.launchError;
    const pid = this.nextPid++;
    const identity = { pid, startTicks: 1_000_000 + pid };
    const health = createServer((req, res) => {
      if (req.url === '/healthz') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"alive"}');
      } else {
        res.writeHead(404).end();
      }
    });
    health.on('error', () => undefined); // a port taken by someone else: the editor never gets healthy
    if (this.answersHealth) health.listen(spec.port, '127.0.0.1');
    this.processes.set(pid, { name: spec.name, identity, spec, health });
    this.launches.push(spec);
    return { handle: identity, endpoint: this.endpointOf(spec.port) };
  }

  endpointOf(port: number): EditorEndpoint {
    return { host: '127.0.0.1', port };
  }

  /** Every live editor idles at 1 % CPU and 10 MB. */
  async usage(handles: ProcessIdentity[]): Promise<Map<ProcessIdentity, EditorUsage>> {
    return new Map(handles.filter((h) => this.isAlive(h)).map((h) => [h, { cpuPercent: 1, memoryMb: 10, uptime: 1 }]));
  }

  isAlive(identity: ProcessIdentity): boolean {
    return this.processes.get(identity.pid)?.identity.startTicks === identity.startTicks;
  }

  exitPending(identity: ProcessIdentity): boolean {
    return this.unreaped.has(identity.pid);
  }

  watch(): void {}

  /** Only the live editor launched for that very name, as /proc would show. */
  owns(name: string, identity: ProcessIdentity): { endpoint: EditorEndpoint | undefined } | undefined {
    const editor = this.processes.get(identity.pid);
    return editor?.name === name && editor.identity.startTicks === identity.startTicks ? { endpoint: this.endpointOf(editor.spec.port) } : undefined;
  }

  /** Stops only what owns() says is that server's editor; records every stop asked for. */
  async stop(name: string, identity: ProcessIdentity): Promise<boolean> {
    if (!this.owns(name, identity)) return false;
    this.stops.push(identity);
    await this.exit(identity.pid, { code: null, signal: 'SIGTERM' });
    return true;
  }

  discover(): DiscoveredEditor[] {
    return [...this.processes.values()].map((p) => ({ name: p.name, port: p.spec.port, identity: p.identity }));
  }

  onExit(listener: ExitListener): void {
    this.listeners.push(listener);
  }

  /** Identities of the editors of this server that are still alive. */
  alive(name: string): ProcessIdentity[] {
    return [...this.processes.values()].filter((p) => p.name === name).map((p) => p.identity);
  }

  /** Makes the server's live editor die on its own, as a crash or an exit would. */
  async crash(name: string, exit: ExitInfo = { code: 1, signal: null }): Promise<ProcessIdentity> {
    const [identity] = this.alive(name);
    if (!identity) throw new Error(`no live editor for ${name}`);
    await this.exit(identity.pid, exit);
    return identity;
  }

  /** Makes the server's live editor die without reporting its exit yet; `reap` reports it. */
  async die(name: string): Promise<ProcessIdentity> {
    const [identity] = this.alive(name);
    if (!identity) throw new Error(`no live editor for ${name}`);
    const editor = this.processes.get(identity.pid)!;
    this.processes.delete(identity.pid);
    this.unreaped.set(identity.pid, editor);
    await closeServer(editor.health);
    return identity;
  }

  /** Reports the exit of an editor that `die` killed. */
  reap(identity: ProcessIdentity, exit: ExitInfo): void {
    const editor = this.unreaped.get(identity.pid);
    if (!editor) throw new Error(`pid ${identity.pid} is not waiting to be reaped`);
    this.unreaped.delete(identity.pid);
    for (const listener of this.listeners) listener(editor.name, editor.identity, exit);
  }

  dispose(): void {
    void this.close();
  }

  /** Forgets every editor and waits until their /healthz listeners are closed. */
  async close(): Promise<void> {
    const editors = [...this.processes.values()];
    this.processes.clear();
    this.listeners = [];
    await Promise.all(editors.map((p) => closeServer(p.health)));
  }

  private async exit(pid: number, exit: ExitInfo): Promise<void> {
    const editor = this.processes.get(pid);
    if (!editor) return;
    this.processes.delete(pid);
    await closeServer(editor.health);
    for (const listener of this.listeners) listener(editor.name, editor.identity, exit);
  }
}

function closeServer(server: Server | undefined): Promise<void> {
  if (!server?.listening) return Promise.resolve();
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** Records what the reconciler tells the log hub. */
export class FakeLogs implements ServerLogs {
  readonly events: Array<{ name: string; level: LogLevel; message: string }> = [];
  readonly untracked: Array<{ name: string; remove?: boolean }> = [];
  private readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  rawPaths(name: string): { dir: string; stdout: string; stderr: string } {
    const dir = join(this.dir, name);
    return { dir, stdout: join(dir, 'stdout.log'), stderr: join(dir, 'stderr.log') };
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
