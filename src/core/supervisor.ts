// Running a program detached: in its own process group (so stopping it stops whatever it started),
// its output appended to files (not pipes, so it keeps writing while the service restarts), known
// by its identity (pid and start time, never a pid alone), its exit reported, and stopped as a
// group: SIGTERM, then SIGKILL after a grace period. The editors use spawnDetached and let the
// controller decide about restarts; the assistant's router uses Supervisor, which also starts the
// program again after it exits, with a capped backoff that starts over after a stable run.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, closeSync, openSync } from 'node:fs';
import { backoffMs } from './backoff.ts';
import { realClock, type Clock } from './clock.ts';
import { KeyedMutex } from './mutex.ts';
import { stopProcessGroup } from './process-group.ts';
import { identityOf, type ProcessIdentity } from './procfs.ts';

export interface ExitInfo {
  code: number | null;
  signal: string | null;
}

export interface DetachedSpec {
  command: string;
  args: readonly string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Its standard output is appended to this file. */
  stdoutPath: string;
  /** Its standard error is appended to this file; default: the same file as its output. */
  stderrPath?: string;
  /** A line (without its newline) appended to stdoutPath just before it starts. */
  header?: string;
  /** The service's Node.js does not wait for it to exit (an editor outlives the service either way). */
  unref?: boolean;
}

export interface SpawnOptions {
  /** spawn reports ENOENT and friends as an 'error' event: passed here (without a listener it would end the service). */
  onError?: (error: Error) => void;
  /** Where startedAt comes from. */
  clock?: Pick<Clock, 'now'>;
}

/** A program spawnDetached started. */
export class DetachedProcess {
  readonly identity: ProcessIdentity;
  /** When it was started, on the clock given to spawnDetached. */
  readonly startedAt: number;
  /** Resolves with its exit code and signal once Node.js has reaped it. */
  readonly exited: Promise<ExitInfo>;
  private exit: ExitInfo | undefined;
  private stopAsked = false;
  private readonly listeners: Array<(exit: ExitInfo) => void> = [];

  constructor(child: ChildProcess, identity: ProcessIdentity, startedAt: number) {
    this.identity = identity;
    this.startedAt = startedAt;
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => {
      const exit = { code, signal };
      this.exit = exit;
      for (const listener of this.listeners.splice(0)) listener(exit);
      resolve(exit);
    }));
  }

  get pid(): number {
    return this.identity.pid;
  }

  /** Its exit, once reported; undefined while it runs or is not reaped yet. */
  get exitInfo(): ExitInfo | undefined {
    return this.exit;
  }

  /** True once stop() was called: its exit was asked for. */
  get stopRequested(): boolean {
    return this.stopAsked;
  }

  /** Called with its exit, in the 'exit' event itself (before `exited` resolves); at once if it was reported already. */
  onExit(listener: (exit: ExitInfo) => void): void {
    if (this.exit) listener(this.exit);
    else this.listeners.push(listener);
  }

  /**
   * Stops its process group: SIGTERM, SIGKILL after graceMs (core/process-group.ts). With
   * waitForExitMs, then waits that long at most for Node.js to report the exit: a process that
   * SIGKILL did not end (stuck in the kernel) must not hold up the caller.
   */
  async stop(graceMs: number, waitForExitMs = 0): Promise<void> {
    this.stopAsked = true;
    await stopProcessGroup(this.identity, graceMs);
    if (waitForExitMs <= 0 || this.exit) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.exited, new Promise<void>((resolve) => (timer = setTimeout(resolve, waitForExitMs)))]);
    clearTimeout(timer);
  }
}

/**
 * Starts `spec.command` detached, in a process group of its own, with its output appended to
 * the files. Undefined when it could not be started (no pid; the reason goes to onError).
 */
export function spawnDetached(spec: DetachedSpec, options: SpawnOptions = {}): DetachedProcess | undefined {
  if (spec.header !== undefined) appendFileSync(spec.stdoutPath, `${spec.header}\n`);
  const out = openSync(spec.stdoutPath, 'a');
  let err: number | undefined;
  try {
    if (spec.stderrPath !== undefined) err = openSync(spec.stderrPath, 'a');
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      detached: true,
      stdio: ['ignore', out, err ?? out],
      env: spec.env,
    });
    child.on('error', options.onError ?? (() => undefined));
    if (child.pid === undefined) return undefined;
    // The start time makes the pid an identity; a process already gone (and reaped) has none to read.
    const identity = identityOf(child.pid) ?? { pid: child.pid, startTicks: -1 };
    const started = new DetachedProcess(child, identity, (options.clock ?? realClock).now());
    if (spec.unref) child.unref();
    return started;
  } finally {
    closeSync(out);
    if (err !== undefined) closeSync(err);
  }
}

/** How a Supervisor starts a program again that exited without being asked to. */
export interface RestartPolicy {
  /** The wait after the first quick exit, doubled at each quick exit in a row up to maxBackoffMs. */
  initialBackoffMs: number;
  maxBackoffMs: number;
  /** A run this long or longer was stable: the wait after it is initialBackoffMs again. */
  stableAfterMs: number;
}

/** What a Supervisor reports when its program exits (or could not be started: `process` undefined). */
export interface SupervisedExit {
  process: DetachedProcess | undefined;
  exit: ExitInfo;
  ranMs: number;
  /** The wait before it starts again; undefined when it does not (asked for, disposed, or no restart policy). */
  restartInMs: number | undefined;
}

export interface SupervisorOptions {
  /** What to start, read afresh at each start; undefined when there is nothing to start now. May prepare folders and files. */
  prepare(): DetachedSpec | undefined;
  /** Resolves once a started program is ready (or waiting for it gave up); raced with its exit. */
  ready?(process: DetachedProcess): Promise<void>;
  /** Without one, a program that exits stays stopped. */
  restart?: RestartPolicy;
  /** stop: SIGTERM to the group, SIGKILL after this long. */
  stopGraceMs: number;
  /** After stopping, how long to wait at most for Node.js to report the exit (default 5 s). */
  reapTimeoutMs?: number;
  clock?: Clock;
  onSpawnError?(error: Error): void;
  /** Called once it runs, before the readiness check. */
  onStarted?(process: DetachedProcess): void;
  onExited?(event: SupervisedExit): void;
  /** A start the restart timer made failed (prepare threw, say). */
  onRestartFailed?(error: Error): void;
}

const ONE_AT_A_TIME = 'supervisor';

/** Keeps one program running: one start or stop at a time, restarts with backoff after an exit. */
export class Supervisor {
  private readonly options: SupervisorOptions;
  private readonly clock: Clock;
  private readonly steps = new KeyedMutex();
  private running: DetachedProcess | undefined;
  private startCount = 0;
  /** Quick exits in a row (a run of stableAfterMs or more starts the count again). */
  private quickExits = 0;
  private restartTimer: unknown;
  private nextStart: number | undefined;
  private supervising = false;
  private disposed = false;

  constructor(options: SupervisorOptions) {
    this.options = options;
    this.clock = options.clock ?? realClock;
  }

  /** The program while it runs. */
  get current(): DetachedProcess | undefined {
    return this.running;
  }

  /** How many times it was started. */
  get starts(): number {
    return this.startCount;
  }

  /** When a program that exited is started again (clock time); undefined when none is waiting. */
  get nextStartAt(): number | undefined {
    return this.nextStart;
  }

  /** Starts supervising, and the program if prepare() gives something to start. Resolves once it is ready or exited. */
  start(): Promise<void> {
    this.supervising = true;
    return this.serialized(() => this.launch());
  }

  /**
   * Stops the program (`before` is told first) and starts it again, or starts it if it was not
   * running; the backoff starts over. Nothing before start() or after dispose().
   */
  restart(before?: (running: DetachedProcess) => void): Promise<void> {
    if (!this.supervising || this.disposed) return Promise.resolve();
    return this.serialized(async () => {
      this.clearRestartTimer();
      if (this.running) {
        before?.(this.running);
        await this.stopCurrent();
      }
      this.quickExits = 0;
      await this.launch();
    });
  }

  /** Stops the program and supervises no more. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.supervising = false;
    this.clearRestartTimer();
    await this.serialized(() => this.stopCurrent());
  }

  private serialized(step: () => Promise<void>): Promise<void> {
    return this.steps.run(ONE_AT_A_TIME, step);
  }

  private async launch(): Promise<void> {
    if (this.disposed || this.running) return;
    const spec = this.options.prepare();
    if (!spec) return;
    this.nextStart = undefined;
    const started = spawnDetached(spec, { onError: this.options.onSpawnError, clock: this.clock });
    if (!started) {
      this.afterExit(undefined, { code: null, signal: null }, this.clock.now());
      return;
    }
    this.startCount += 1;
    this.running = started;
    started.onExit((exit) => this.afterExit(started, exit, started.startedAt));
    this.options.onStarted?.(started);
    if (this.options.ready) await Promise.race([this.options.ready(started), started.exited]);
  }

  private afterExit(exited: DetachedProcess | undefined, exit: ExitInfo, startedAt: number): void {
    if (exited && this.running !== exited) return;
    this.running = undefined;
    const ranMs = this.clock.now() - startedAt;
    const policy = this.options.restart;
    let restartInMs: number | undefined;
    if (policy && this.supervising && !this.disposed && !exited?.stopRequested) {
      // One that ran a while starts again soon; one that keeps failing waits longer each time.
      this.quickExits = ranMs >= policy.stableAfterMs ? 1 : this.quickExits + 1;
      restartInMs = backoffMs(this.quickExits, { initialMs: policy.initialBackoffMs, maxMs: policy.maxBackoffMs });
      this.nextStart = this.clock.now() + restartInMs;
    }
    this.options.onExited?.({ process: exited, exit, ranMs, restartInMs });
    if (restartInMs === undefined) return;
    this.restartTimer = this.clock.setTimeout(() => {
      this.restartTimer = undefined;
      this.serialized(() => this.launch()).catch((error) => this.options.onRestartFailed?.(error as Error));
    }, restartInMs);
  }

  private async stopCurrent(): Promise<void> {
    const running = this.running;
    if (!running) return;
    await running.stop(this.options.stopGraceMs, this.options.reapTimeoutMs ?? 5000);
    // Not reaped in time: counted as ended all the same.
    if (this.running === running) this.afterExit(running, { code: null, signal: 'SIGKILL' }, running.startedAt);
  }

  private clearRestartTimer(): void {
    if (this.restartTimer !== undefined) this.clock.clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    this.nextStart = undefined;
  }
}
