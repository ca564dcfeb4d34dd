// Runs claude-code-router (ccr), the local proxy that editors' coding assistants send model
// requests to: launched with the service's own Node.js once its config file exists, started again
// when it exits (with a capped backoff) and after a token rotation, stopped with the service.
// Only a router this service launched, in this run or an earlier one on the same data folder, is
// ever signalled.
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { editorEnvironment } from '../core/child-env.ts';
import type { HealthSection } from '../core/health-section.ts';
import { environOf, findGroupLeaders } from '../core/leftovers.ts';
import { stopProcessGroup } from '../core/process-group.ts';
import { isAlive, readCmdline } from '../core/procfs.ts';
import { Supervisor, type DetachedProcess, type DetachedSpec, type SupervisedExit } from '../core/supervisor.ts';
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

const DEFAULT_PORT = 3456;

export class RouterProcess {
  readonly configFile: string;
  readonly pidFile: string;
  readonly logFile: string;
  readonly binDir: string;
  private readonly options: Required<Omit<RouterProcessOptions, 'env' | 'port'>> & { env: NodeJS.ProcessEnv };
  /** Starts, restarts (with the backoff) and stops the router process, one step at a time. */
  private readonly supervisor: Supervisor;
  private lastExit: RouterExit | undefined;
  private listening = false;
  private address: { host: string; port: number };
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
    this.address = { host: '127.0.0.1', port: options.port ?? DEFAULT_PORT };
    const { initialBackoffMs, maxBackoffMs, stableAfterMs, stopGraceMs, log } = this.options;
    this.supervisor = new Supervisor({
      prepare: () => this.prepare(),
      ready: (running) => this.waitListening(running),
      restart: { initialBackoffMs, maxBackoffMs, stableAfterMs },
      stopGraceMs,
      onSpawnError: (error) => log(`assistant router: claude-code-router could not be started: ${error.message}`),
      onStarted: (running) => {
        this.listening = false;
        log(`assistant router: started claude-code-router (pid ${running.pid}) on ${this.address.host}:${this.address.port} with HOME=${this.options.homeDir}; its output goes to ${this.logFile}`);
      },
      onExited: (exit) => this.afterExit(exit),
      onRestartFailed: (error) => log(`assistant router: starting claude-code-router failed: ${error.message}`),
    });
  }

  /**
   * Writes the `ccr` command, stops a router a previous run of this service left behind, and
   * launches the router if its config file exists; otherwise restart() launches it later.
   */
  async start(): Promise<void> {
    await writeCcrShim({ binDir: this.binDir, nodePath: this.options.nodePath, cliPath: this.options.cliPath, homeDir: this.options.homeDir });
    await this.stopLeftovers();
    await this.supervisor.start();
  }

  /**
   * Stops the router and starts it again with the config file as it is now (after the access
   * token was rotated, say); starts it if it was not running. Resolves once it answers on its
   * port, or has exited, or readyTimeoutMs passed.
   */
  restart(reason: string): Promise<void> {
    return this.supervisor.restart((running) => this.options.log(`assistant router: restarting claude-code-router (pid ${running.pid}): ${reason}`));
  }

  /** Stops the router (its process group: SIGTERM, then SIGKILL) and supervises no more. */
  dispose(): Promise<void> {
    return this.supervisor.dispose();
  }

  state(): RouterState {
    const current = this.supervisor.current;
    const nextStartAt = this.supervisor.nextStartAt;
    return {
      running: current !== undefined,
      listening: current !== undefined && this.listening,
      pid: current?.pid ?? null,
      host: this.address.host,
      port: this.address.port,
      restarts: Math.max(0, this.supervisor.starts - 1),
      started_at: current ? new Date(current.startedAt).toISOString() : null,
      last_exit: this.lastExit ?? null,
      next_start_at: nextStartAt === undefined ? null : new Date(nextStartAt).toISOString(),
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

  /** What the next start runs, once the config file exists: the address read, the pid file and folders ready. */
  private prepare(): DetachedSpec | undefined {
    if (!this.hasConfig()) return undefined;
    this.address = this.readAddress();
    this.clearStalePidFile();
    mkdirSync(dirname(this.logFile), { recursive: true });
    mkdirSync(this.options.homeDir, { recursive: true });
    return {
      command: this.options.nodePath,
      args: [this.options.cliPath, 'start'],
      cwd: this.options.homeDir,
      env: this.routerEnvironment(),
      // Its output and errors, after a line that says when and where it was started.
      stdoutPath: this.logFile,
      header: `--- ${new Date().toISOString()} devbox-controller starts claude-code-router on ${this.address.host}:${this.address.port}`,
    };
  }

  /** Polls the port until it answers, the router exits, or readyTimeoutMs passes. */
  private async waitListening(running: DetachedProcess): Promise<void> {
    const deadline = Date.now() + this.options.readyTimeoutMs;
    while (this.supervisor.current === running && Date.now() < deadline) {
      if (await answers(this.address.host, this.address.port)) {
        if (this.supervisor.current === running) this.listening = true;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  private afterExit({ process: exited, exit, ranMs, restartInMs }: SupervisedExit): void {
    this.listening = false;
    this.lastExit = { code: exit.code, signal: exit.signal, at: new Date().toISOString(), ran_seconds: Math.round(ranMs / 100) / 10 };
    const how = exit.signal ? `was ended by ${exit.signal}` : `exited with code ${exit.code}`;
    if (restartInMs === undefined) {
      this.options.log(`assistant router: claude-code-router (pid ${exited?.pid ?? '-'}) ${how}`);
      return;
    }
    this.options.log(`assistant router: claude-code-router (pid ${exited?.pid ?? '-'}) ${how} after ${this.lastExit.ran_seconds} s; starting it again in ${restartInMs / 1000} s (its output: ${this.logFile})`);
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
    const ours = (pid: number) => (isRouterProcess(pid, this.options.cliPath) && environOf(pid)?.includes(marker)) || undefined;
    for (const { identity } of findGroupLeaders(ours)) {
      if (!isAlive(identity)) continue;
      this.options.log(`assistant router: stopping claude-code-router (pid ${identity.pid}) left running by an earlier run of this service`);
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
