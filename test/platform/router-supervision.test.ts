// How RouterProcess supervises claude-code-router, with a stand-in for its command line that can
// crash, serve, or refuse to start beside another: a capped backoff, a router it did not start
// left alone, and a leftover of an earlier run of the same data folder stopped.
import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RouterProcess, ROUTER_MARKER_VARIABLE } from '../../src/platform/router-process.ts';
import { eventually, processExists } from '../helpers/service.ts';
import { freePort } from '../helpers/net.ts';

// Behaves as claude-code-router 1.x's `start` does where it matters here: reads
// ~/.claude-code-router/config.json, refuses to start while its pid file names a live process,
// writes its pid, serves on PORT, removes the pid file on SIGTERM. MODE "crash" exits at once.
const FAKE_CLI = `
import { createServer } from 'node:http';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
const dir = join(homedir(), '.claude-code-router');
const pidFile = join(dir, '.claude-code-router.pid');
const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
if (config.MODE === 'crash') { console.error('fake router: crashing'); process.exit(3); }
try { process.kill(Number(readFileSync(pidFile, 'utf8')), 0); console.log('Service is already running'); process.exit(0); } catch {}
writeFileSync(pidFile, String(process.pid));
createServer((_req, res) => res.end('fake router')).listen(config.PORT, '127.0.0.1');
process.on('SIGTERM', () => { rmSync(pidFile, { force: true }); process.exit(0); });
`;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Setup {
  root: string;
  home: string;
  dataDir: string;
  cli: string;
  port: number;
  lines: string[];
  writeConfig(mode: 'serve' | 'crash'): Promise<void>;
  router(options?: Partial<ConstructorParameters<typeof RouterProcess>[0]>): RouterProcess;
}

async function setup(): Promise<Setup> {
  const root = await fs.mkdtemp(join(tmpdir(), 'devbox-router-'));
  const home = join(root, 'home');
  const dataDir = join(root, 'data');
  // The path ends as the real one's does, which is how a router process is recognised.
  const cli = join(root, 'node_modules', '@musistudio', 'claude-code-router', 'dist', 'cli.js');
  await fs.mkdir(join(home, '.claude-code-router'), { recursive: true });
  await fs.mkdir(join(cli, '..'), { recursive: true });
  await fs.writeFile(cli, FAKE_CLI);
  const port = await freePort();
  const lines: string[] = [];
  const routers: RouterProcess[] = [];
  cleanups.push(async () => {
    for (const router of routers) await router.dispose();
    await fs.rm(root, { recursive: true, force: true });
  });
  return {
    root, home, dataDir, cli, port, lines,
    writeConfig: (mode) => fs.writeFile(join(home, '.claude-code-router', 'config.json'), JSON.stringify({ HOST: '127.0.0.1', PORT: port, MODE: mode })),
    router: (options = {}) => {
      const router = new RouterProcess({
        homeDir: home, dataDir, cliPath: cli, port, log: (line) => lines.push(line),
        initialBackoffMs: 100, maxBackoffMs: 400, stableAfterMs: 20_000, stopGraceMs: 1000, ...options,
      });
      routers.push(router);
      return router;
    },
  };
}

/** The fake router started by hand, as `ccr start` in a terminal or an earlier service would. */
function startByHand(s: Setup, env: NodeJS.ProcessEnv = {}): ChildProcess {
  const child = spawn(process.execPath, [s.cli, 'start'], { detached: true, stdio: 'ignore', env: { ...process.env, HOME: s.home, ...env } });
  child.unref();
  cleanups.push(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone already
    }
  });
  return child;
}

const answers = async (port: number) => (await fetch(`http://127.0.0.1:${port}/`).then((res) => res.text()).catch(() => '')) === 'fake router';

describe('router supervision', () => {
  it('waits for its config file, and starts a router that keeps exiting again after a doubling wait, capped', async () => {
    const s = await setup();
    const router = s.router();
    await router.start();
    expect(router.state()).toMatchObject({ running: false, waiting_for_config: true, port: s.port, restarts: 0 });
    expect(s.lines).toEqual([]);

    await s.writeConfig('crash');
    await router.restart('a new access token was written');
    await eventually(() => s.lines.filter((line) => line.includes('starting it again in')).length >= 5);
    const delays = s.lines.filter((line) => line.includes('starting it again in')).map((line) => Number(/again in ([\d.]+) s/.exec(line)![1]));
    expect(delays.slice(0, 5)).toEqual([0.1, 0.2, 0.4, 0.4, 0.4]);
    const state = router.state();
    expect(state.last_exit).toMatchObject({ code: 3, signal: null });
    expect(state.restarts).toBeGreaterThanOrEqual(4);
    expect(await fs.readFile(state.log_file, 'utf8')).toContain('fake router: crashing');
    const problems = await eventually(() => {
      const found = router.healthSection().problems!();
      return found.length > 0 ? found : undefined;
    });
    expect(problems[0]).toContain('exited (code 3)');
    expect(problems[0]).toContain(state.log_file);

    // Fixed: the next start serves, and there is no problem left.
    await s.writeConfig('serve');
    const running = await eventually(() => (router.state().listening ? router.state() : undefined));
    expect(await answers(s.port)).toBe(true);
    expect(router.healthSection().problems!()).toEqual([]);

    await router.dispose();
    expect(processExists(running.pid!)).toBe(false);
    expect(await answers(s.port)).toBe(false);
    expect(router.state().running).toBe(false);
  });

  it('never signals a router it did not start: it stays, and GET /health says how to free the way', async () => {
    const s = await setup();
    await s.writeConfig('serve');
    const foreign = startByHand(s);
    await eventually(() => answers(s.port));
    const router = s.router();
    await router.start();
    await eventually(() => router.state().blocked_by_pid === foreign.pid);
    expect(router.healthSection().problems!()[0]).toContain('ccr stop');
    expect(s.lines.some((line) => line.includes(`did not start (pid ${foreign.pid}`))).toBe(true);
    await router.restart('a new access token was written');
    await router.dispose();
    expect(processExists(foreign.pid!)).toBe(true);
    expect(await answers(s.port)).toBe(true);
  });

  it("stops a router an earlier run left for the same data folder, and only that one", async () => {
    const s = await setup();
    await s.writeConfig('serve');
    const leftover = startByHand(s, { [ROUTER_MARKER_VARIABLE]: s.dataDir });
    await eventually(() => answers(s.port));
    // Another data folder's router (on another port and home) is not this service's to stop.
    const other = await setup();
    await other.writeConfig('serve');
    const neighbour = startByHand(other, { [ROUTER_MARKER_VARIABLE]: other.dataDir });
    await eventually(() => answers(other.port));

    const router = s.router();
    await router.start();
    expect(processExists(leftover.pid!)).toBe(false);
    expect(s.lines.some((line) => line.includes(`(pid ${leftover.pid}) left running by an earlier run`))).toBe(true);
    const state = await eventually(() => (router.state().listening ? router.state() : undefined));
    expect(state.pid).not.toBe(leftover.pid);
    expect(processExists(neighbour.pid!)).toBe(true);
  });
});
