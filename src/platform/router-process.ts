// Runs claude-code-router (ccr), the local proxy that editors' coding assistants send model
// requests to: launched with the service's own Node.js once its config file exists, started again
// when it exits (with a capped backoff) and after a token rotation, stopped with the service.
// Only a router this service launched, in this run or an earlier one on the same data folder, is
// ever signalled.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, closeSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { backoffMs } from '../core/backoff.ts';
import { editorEnvironment } from '../core/child-env.ts';
import type { HealthSection } from '../core/health-section.ts';
import { stopProcessGroup } from '../core/process-group.ts';
import { identityOf, isAlive, listPids, readCmdline, readStat, type ProcessIdentity } from '../core/procfs.ts';
import { writeCcrShim } from './ccr-shim.ts';

/** Set in the router's environment to the data folder it was launched for: how a leftover one is known as ours. */
export const ROUTER_MARKER_VARIABLE = 'DEVBOX_ROUTER_OF';

/** claude-code-router's command line program, as installed with the project. */
export function routerCli(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('@musistudio/claude-code-router/package.json')), 'dist', 'cli.js');
}

export interface RouterProcessOptions {
  /** The router's HOME: it reads <homeDir>/.claude-code-router/config.json and writes its pid file there. */
  homeDir: string;
  /** The service's data folder: the router's output goes to <data>/logs, the `ccr` command to <data>/bin. */
  dataDir: string;
  /** The port the config file is written with (DEVBOX_ROUTER_PORT); shown until the file says otherwise. */
  port?: number;
  /** The Node.js that runs the router and `ccr`; default: the service's own. */
  nodePath?: string;
  cliPath?: string;
  /** The environment the router's is made from (secrets removed); default process.env. */
  env?: NodeJS.ProcessEnv;
  /** First delay before starting a router that exited, doubled at each quick exit up to maxBackoffMs. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** A router that ran this long before exiting starts again after initialBackoffMs. */
  stableAfterMs?: number;
  /** SIGTERM, then SIGKILL after this long. */
  stopGraceMs?: number;
  /** How long a start may take to answer on its port before restart() gives up waiting. */
  readyTimeoutMs?: number;
  log: (message: string) => void;
}

export interface RouterExit {
  code: number | null;
  signal: string | null;
  at: string;
  ran_seconds: number;
}

/** What GET /health shows under assistant_router. */
export interface RouterState {
  running: boolean;
  /** It answers on its port (since its last start). */
  listening: boolean;
  pid: number | null;
  host: string;
  port: number;
  /** Starts after the first: after an exit, a token rotation or a restart request. */
  restarts: number;
  started_at: string | null;
  last_exit: RouterExit | null;
  /** When a router that exited is started again; null when none is waiting. */
  next_start_at: string | null;
  /** No config file yet: the router starts once the access token is written to it. */
  waiting_for_config: boolean;
  /** A live claude-code-router the service did not start holds the pid file, so the service's cannot start. */
  blocked_by_pid: number | null;
  config_file: string;
  log_file: string;
  /** Put on the PATH of editors: `ccr code` in an editor terminal uses this router. */
  command: string;
}

interface Running {
  child: ChildProcess;
  identity: ProcessIdentity;
  startedAt: number;
  exited: Promise<void>;
}

const DEFAULT_PORT = 3456;

export class RouterProcess {
  readonly configFile: string;
  readonly pidFile: string;
  readonly logFile: string;
  readonly binDir: string;
  private readonly options: Required<Omit<RouterProcessOptions, 'env' | 'port'>> & { env: NodeJS.ProcessEnv };
  private current: Running | undefined;
  /** Quick exits in a row (a run of stableAfterMs or more starts the count again). */
  private quickExits = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private nextStartAt: number | undefined;
  private starts = 0;
  private lastExit: RouterExit | undefined;
  private listening = false;
  private address: { host: string; port: number };
  private supervising = false;
  private disposed = false;
  /** One start or stop at a time. */
  private chain: Promise<void> = Promise.resolve();
  /** The pid of a router the service did not start that held the pid file at the last launch. */
  private foreign: number | undefined;

  constructor(options: RouterProcessOptions) {
    this.options = {
      nodePath: process.execPath,
      cliPath: routerCli(),
      initialBackoffMs: 1000,
      maxBackoffMs: 60_000,
      stableAfterMs: 30_000,
      stopGraceMs: 3000,
      readyTimeoutMs: 30_000,
      ...options,
      env: options.env ?? process.env,
    };
    const routerDir = join(options.homeDir, '.claude-code-router');
    this.configFile = join(routerDir, 'config.json');
    this.pidFile = join(routerDir, '.claude-code-router.pid');
    this.logFile = join(options.dataDir, 'logs', 'claude-code-router.log');
    this.binDir = join(options.dataDir, 'bin');
    this.quickExits = 0;
    this.address = { host: '127.0.0.1', port: options.port ?? DEFAULT_PORT };
  }

  /**
   * Writes the `ccr` command, stops a router a previous run of this service left behind, and
   * launches the router if its config file exists; otherwise restart() launches it later.
   */
  async start(): Promise<void> {
    await writeCcrShim({ binDir: this.binDir, nodePath: this.options.nodePath, cliPath: this.options.cliPath, homeDir: this.options.homeDir });
    await this.stopLeftovers();
    this.supervising = true;
    if (this.hasConfig()) await this.serialized(() => this.launch());
  }

  /**
   * Stops the router and starts it again with the config file as it is now (after the access
   * token was rotated, say); starts it if it was not running. Resolves once it answers on its
   * port, or has exited, or readyTimeoutMs passed.
   */
  restart(reason: string): Promise<void> {
    if (!this.supervising || this.disposed) return Promise.resolve();
    return this.serialized(async () => {
      this.clearRestartTimer();
      if (this.current) {
        this.options.log(`assistant router: restarting claude-code-router (pid ${this.current.identity.pid}): ${reason}`);
        await this.stopCurrent();
      }
      this.quickExits = 0;
      await this.launch();
    });
  }

  /** Stops the router (its process group: SIGTERM, then SIGKILL) and supervises no more. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.supervising = false;
    this.clearRestartTimer();
    await this.serialized(() => this.stopCurrent());
  }

  state(): RouterState {
    const current = this.current;
    return {
      running: current !== undefined,
      listening: current !== undefined && this.listening,
      pid: current?.identity.pid ?? null,
      host: this.address.host,
      port: this.address.port,
      restarts: Math.max(0, this.starts - 1),
      started_at: current ? new Date(current.startedAt).toISOString() : null,
      last_exit: this.lastExit ?? null,
      next_start_at: this.nextStartAt === undefined ? null : new Date(this.nextStartAt).toISOString(),
      waiting_for_config: !current && !this.hasConfig(),
      blocked_by_pid: !current && this.foreign !== undefined && isRouterProcess(this.foreign, this.options.cliPath) ? this.foreign : null,
      config_file: this.configFile,
      log_file: this.logFile,
      command: join(this.binDir, 'ccr'),
    };
  }

  /** GET /health's assistant_router section; a router that exited and waits to start again is a problem. */
  healthSection(): HealthSection {
    return {
      read: () => ({ ...this.state() }),
      problems: () => {
        const state = this.state();
        if (state.blocked_by_pid !== null) {
          return [`assistant_router: a claude-code-router the service did not start (pid ${state.blocked_by_pid}) holds ${this.pidFile}, so the service's cannot start and that one keeps the token it started with: run \`ccr stop\` in an editor terminal`];
        }
        if (state.running || !state.next_start_at || !state.last_exit) return [];
        const exit = state.last_exit.signal ? `signal ${state.last_exit.signal}` : `code ${state.last_exit.code}`;
        return [`assistant_router: claude-code-router exited (${exit}) and starts again at ${state.next_start_at}: its output is in ${state.log_file}`];
      },
    };
  }

  private serialized(step: () => Promise<void>): Promise<void> {
    const next = this.chain.then(step);
    this.chain = next.catch(() => undefined);
    return next;
  }

  private hasConfig(): boolean {
    try {
      readFileSync(this.configFile);
      return true;
    } catch {
      return false;
    }
  }

  /** HOST and PORT from the config file, as the router reads them (127.0.0.1:3456 when absent). */
  private readAddress(): { host: string; port: number } {
    try {
      const config = JSON.parse(readFileSync(this.configFile, 'utf8')) as { HOST?: unknown; PORT?: unknown };
      const port = Number(config.PORT);
      return {
        host: typeof config.HOST === 'string' && config.HOST !== '' ? config.HOST : '127.0.0.1',
        port: Number.isInteger(port) && port > 0 && port < 65536 ? port : DEFAULT_PORT,
      };
    } catch {
      return { host: '127.0.0.1', port: DEFAULT_PORT };
    }
  }

  private async launch(): Promise<void> {
    if (this.disposed || this.current) return;
    if (!this.hasConfig()) return;
    this.nextStartAt = undefined;
    this.address = this.readAddress();
    this.clearStalePidFile();
    mkdirSync(dirname(this.logFile), { recursive: true });
    mkdirSync(this.options.homeDir, { recursive: true });
    appendFileSync(this.logFile, `--- ${new Date().toISOString()} devbox-controller starts claude-code-router on ${this.address.host}:${this.address.port}\n`);
    const out = openSync(this.logFile, 'a');
    let child: ChildProcess;
    try {
      child = spawn(this.options.nodePath, [this.options.cliPath, 'start'], {
        cwd: this.options.homeDir,
        // Its own process group, so stopping it stops whatever it started too.
        detached: true,
        stdio: ['ignore', out, out],
        env: this.routerEnvironment(),
      });
    } finally {
      closeSync(out);
    }
    // spawn reports ENOENT and friends as an event; without a listener it would end the service.
    child.on('error', (error) => this.options.log(`assistant router: claude-code-router could not be started: ${error.message}`));
    if (child.pid === undefined) {
      this.afterExit(undefined, { code: null, signal: null }, Date.now());
      return;
    }
    const identity = identityOf(child.pid) ?? { pid: child.pid, startTicks: -1 };
    const startedAt = Date.now();
    this.starts += 1;
    this.listening = false;
    const exited = new Promise<void>((resolve) => child.once('exit', (code, signal) => {
      this.afterExit(running, { code, signal }, startedAt);
      resolve();
    }));
    const running: Running = { child, identity, startedAt, exited };
    this.current = running;
    this.options.log(`assistant router: started claude-code-router (pid ${identity.pid}) on ${this.address.host}:${this.address.port} with HOME=${this.options.homeDir}; its output goes to ${this.logFile}`);
    await Promise.race([this.waitListening(running), exited]);
  }

  /** Polls the port until it answers, the router exits, or readyTimeoutMs passes. */
  private async waitListening(running: Running): Promise<void> {
    const deadline = Date.now() + this.options.readyTimeoutMs;
    while (this.current === running && Date.now() < deadline) {
      if (await answers(this.address.host, this.address.port)) {
        if (this.current === running) this.listening = true;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  private afterExit(running: Running | undefined, exit: { code: number | null; signal: string | null }, startedAt: number): void {
    if (running && this.current !== running) return;
    this.current = undefined;
    this.listening = false;
    const ranMs = Date.now() - startedAt;
    this.lastExit = { code: exit.code, signal: exit.signal, at: new Date().toISOString(), ran_seconds: Math.round(ranMs / 100) / 10 };
    const how = exit.signal ? `was ended by ${exit.signal}` : `exited with code ${exit.code}`;
    if (!this.supervising || this.disposed || running?.child.killed) {
      this.options.log(`assistant router: claude-code-router (pid ${running?.child.pid ?? '-'}) ${how}`);
      return;
    }
    // One that ran a while starts again soon; one that keeps failing waits longer each time.
    this.quickExits = ranMs >= this.options.stableAfterMs ? 1 : this.quickExits + 1;
    const delay = backoffMs(this.quickExits, { initialMs: this.options.initialBackoffMs, maxMs: this.options.maxBackoffMs });
    this.nextStartAt = Date.now() + delay;
    this.options.log(`assistant router: claude-code-router (pid ${running?.child.pid ?? '-'}) ${how} after ${this.lastExit.ran_seconds} s; starting it again in ${delay / 1000} s (its output: ${this.logFile})`);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      this.serialized(() => this.launch()).catch((error) => this.options.log(`assistant router: starting claude-code-router failed: ${(error as Error).message}`));
    }, delay);
    this.restartTimer.unref();
  }

  private async stopCurrent(): Promise<void> {
    const running = this.current;
    if (!running) return;
    // Marks the exit as asked for: no restart is scheduled for it.
    running.child.kill('SIGTERM');
    await stopProcessGroup(running.identity, this.options.stopGraceMs);
    // Node reports the exit once it has reaped the process; a process that SIGKILL did not end
    // (stuck in the kernel) must not hold up the shutdown.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([running.exited, new Promise<void>((resolve) => (timer = setTimeout(resolve, 5000)))]);
    clearTimeout(timer);
    if (this.current === running) this.afterExit(running, { code: null, signal: 'SIGKILL' }, running.startedAt);
  }

  private clearRestartTimer(): void {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    this.nextStartAt = undefined;
  }

  /**
   * The router refuses to start while its pid file names a live process. A file left by a router
   * that is gone, whose pid may now be any process, is removed; a live router this service did not
   * launch (`ccr start` in a terminal) is left alone and named in the log.
   */
  private clearStalePidFile(): void {
    let pid: number;
    try {
      pid = Number.parseInt(readFileSync(this.pidFile, 'utf8'), 10);
    } catch {
      this.foreign = undefined;
      return;
    }
    if (Number.isInteger(pid) && pid > 0 && isRouterProcess(pid, this.options.cliPath)) {
      if (this.foreign !== pid) {
        this.foreign = pid;
        this.options.log(`assistant router: a claude-code-router this service did not start (pid ${pid}, in ${this.pidFile}) is running, so the service's cannot: stop it (ccr stop) and the service starts its own`);
      }
      return;
    }
    this.foreign = undefined;
    rmSync(this.pidFile, { force: true });
  }

  /**
   * Routers launched for this data folder by an earlier run of the service that did not stop them
   * (it was killed): /proc shows the router's command line and this folder in their environment.
   * The data folder's lock says no other service uses the folder, so they are nobody else's.
   */
  private async stopLeftovers(): Promise<void> {
    const marker = `${ROUTER_MARKER_VARIABLE}=${this.options.dataDir}`;
    for (const pid of listPids()) {
      const stat = readStat(pid);
      if (!stat || stat.pgid !== pid || pid === process.pid || !isRouterProcess(pid, this.options.cliPath)) continue;
      let environ: string[];
      try {
        environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      } catch {
        continue;
      }
      if (!environ.includes(marker)) continue;
      const identity = { pid, startTicks: stat.startTicks };
      if (!isAlive(identity)) continue;
      this.options.log(`assistant router: stopping claude-code-router (pid ${pid}) left running by an earlier run of this service`);
      await stopProcessGroup(identity, this.options.stopGraceMs);
    }
  }

  /** The service's environment without its secrets (as editors get it), with HOME, the project's Node.js first on PATH, and the marker. */
  private routerEnvironment(): NodeJS.ProcessEnv {
    const env = editorEnvironment(this.options.env);
    // The router would listen there instead of the config file's PORT, where `ccr code` looks.
    delete env.SERVICE_PORT;
    env.HOME = this.options.homeDir;
    env.PATH = [dirname(this.options.nodePath), env.PATH].filter(Boolean).join(':');
    env[ROUTER_MARKER_VARIABLE] = this.options.dataDir;
    return env;
  }
}

/** True when pid runs claude-code-router's `start` (from `cliPath`, or any copy of it). */
function isRouterProcess(pid: number, cliPath: string): boolean {
  const argv = readCmdline(pid);
  return argv.includes('start') && argv.some((arg) => arg === cliPath || arg.endsWith('/claude-code-router/dist/cli.js'));
}

/** True when something accepts a TCP connection at host:port within a second. */
function answers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: host === '0.0.0.0' ? '127.0.0.1' : host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
