// The process supervisor both the editors and the assistant's router run on, with real `node -e`
// children: output in files, an identity /proc agrees with, exits reported, a whole group stopped
// (SIGTERM, SIGKILL after the grace), restarts with a backoff that starts over after a stable run
// (on an injected clock), and leftovers found by their command line and environment.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/core/clock.ts';
import { environValue, findGroupLeaders, groupLeader } from '../../src/core/leftovers.ts';
import { groupExists, identityOf, isAlive, readCmdline, readStat, type ProcessIdentity } from '../../src/core/procfs.ts';
import { spawnDetached, Supervisor, type DetachedProcess, type DetachedSpec, type SupervisedExit } from '../../src/core/supervisor.ts';
import { eventually } from '../helpers/wait.ts';

let dir: string;
const started: DetachedProcess[] = [];
/** Children started in a group of their own (killed as a group), and in this process's group. */
const strays: ChildProcess[] = [];
const members: ChildProcess[] = [];
const supervisors: Supervisor[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'devbox-supervisor-'));
});
afterEach(async () => {
  for (const supervisor of supervisors.splice(0)) await supervisor.dispose();
  for (const proc of started.splice(0)) if (groupExists(proc.pid)) await proc.stop(100);
  for (const child of members.splice(0)) child.kill('SIGKILL');
  for (const child of strays.splice(0)) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  await rm(dir, { recursive: true, force: true });
});

/** A spec that runs `script` with this Node.js, its output in <dir>/out.log (and err.log when asked). */
function node(script: string, extra: Partial<DetachedSpec> = {}): DetachedSpec {
  return { command: process.execPath, args: ['-e', script], cwd: dir, env: { ...process.env }, stdoutPath: join(dir, 'out.log'), ...extra };
}

function launch(spec: DetachedSpec): DetachedProcess {
  const proc = spawnDetached(spec);
  if (!proc) throw new Error('not started');
  started.push(proc);
  return proc;
}

const output = (name = 'out.log') => readFile(join(dir, name), 'utf8').catch(() => '');
const FOREVER = 'setInterval(() => {}, 1000);';

describe('spawnDetached', () => {
  it('appends its output and errors to two files, or to one after a header line', async () => {
    await launch(node('console.log("to out"); console.error("to err")', { stderrPath: join(dir, 'err.log') })).exited;
    expect(await output('out.log')).toBe('to out\n');
    expect(await output('err.log')).toBe('to err\n');

    await launch(node('console.log("again out"); console.error("again err")', { stdoutPath: join(dir, 'one.log'), header: '--- started' })).exited;
    const lines = (await output('one.log')).split('\n');
    expect(lines[0]).toBe('--- started');
    expect(lines.slice(1).sort()).toEqual(['', 'again err', 'again out']);
  });

  it('records an identity /proc agrees with: its pid, its start time, a process group of its own', async () => {
    const proc = launch(node(FOREVER));
    expect(proc.identity).toEqual(identityOf(proc.pid));
    expect(proc.identity.startTicks).toBeGreaterThan(0);
    expect(readStat(proc.pid)?.pgid).toBe(proc.pid);
    expect(readStat(process.pid)?.pgid).not.toBe(proc.pid);
    expect(isAlive(proc.identity)).toBe(true);
  });

  it('reports the exit code, or the signal that ended it, to listeners and through `exited`', async () => {
    const quitter = launch(node('process.exit(3)'));
    const heard: unknown[] = [];
    quitter.onExit((exit) => heard.push(exit));
    expect(await quitter.exited).toEqual({ code: 3, signal: null });
    expect(heard).toEqual([{ code: 3, signal: null }]);
    expect(quitter.exitInfo).toEqual({ code: 3, signal: null });
    // A listener that comes late hears it at once.
    quitter.onExit((exit) => heard.push(exit));
    expect(heard).toHaveLength(2);

    const killed = launch(node(FOREVER));
    expect(killed.exitInfo).toBeUndefined();
    process.kill(killed.pid, 'SIGTERM');
    expect(await killed.exited).toEqual({ code: null, signal: 'SIGTERM' });
    expect(killed.stopRequested).toBe(false);
  });

  it('answers undefined and reports the error when the program cannot be started', async () => {
    const errors: Error[] = [];
    const proc = spawnDetached({ ...node(''), command: join(dir, 'no-such-program') }, { onError: (error) => errors.push(error) });
    expect(proc).toBeUndefined();
    await eventually(() => errors.length === 1);
    expect((errors[0] as NodeJS.ErrnoException).code).toBe('ENOENT');
  });

  it('stops a program that ends on SIGTERM without waiting for the grace period', async () => {
    const proc = launch(node(FOREVER));
    const t0 = performance.now();
    await proc.stop(20_000, 5000);
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(proc.exitInfo).toEqual({ code: null, signal: 'SIGTERM' });
    expect(proc.stopRequested).toBe(true);
    expect(groupExists(proc.pid)).toBe(false);
  });

  it('stops the whole group, a grandchild too: SIGTERM first, SIGKILL once the grace period is over', async () => {
    // Both ignore SIGTERM (and say so); the grandchild stays in the group and prints its pid.
    const grandchild = `process.on('SIGTERM', () => console.log('grandchild got TERM')); console.log('grandchild ' + process.pid); ${FOREVER}`;
    const child = `
      const { spawn } = require('node:child_process');
      process.on('SIGTERM', () => console.log('child got TERM'));
      spawn(process.execPath, ['-e', ${JSON.stringify(grandchild)}], { stdio: 'inherit' });
      ${FOREVER}`;
    const proc = launch(node(child));
    const grandPid = await eventually(async () => Number(/grandchild (\d+)/.exec(await output())?.[1]) || undefined);
    const grand = identityOf(grandPid)!;
    expect(readStat(grandPid)?.pgid).toBe(proc.pid);
    expect(isAlive(grand)).toBe(true);

    const graceMs = 400;
    const t0 = performance.now();
    await proc.stop(graceMs, 5000);
    const took = performance.now() - t0;

    expect(took).toBeGreaterThanOrEqual(graceMs);
    const said = await output();
    expect(said).toContain('child got TERM');
    expect(said).toContain('grandchild got TERM');
    expect(proc.exitInfo).toEqual({ code: null, signal: 'SIGKILL' });
    expect(isAlive(grand)).toBe(false);
    expect(groupExists(proc.pid)).toBe(false);
  });
});

/** Time that moves only when the test says: timers fire in `advance`. */
class ManualClock implements Clock {
  time = 1_000_000;
  private nextId = 1;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.set(id, { at: this.time + ms, fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** The waits of the timers set, from now. */
  pending(): number[] {
    return [...this.timers.values()].map((timer) => timer.at - this.time);
  }

  advance(ms: number): void {
    this.time += ms;
    for (const [id, timer] of [...this.timers].sort((a, b) => a[1].at - b[1].at)) {
      if (timer.at > this.time) continue;
      this.timers.delete(id);
      timer.fn();
    }
  }
}

describe('Supervisor', () => {
  function supervise(mode: { current: 'crash' | 'serve' }, clock: ManualClock, exits: SupervisedExit[]) {
    const supervisor = new Supervisor({
      prepare: () => node(mode.current === 'crash' ? 'process.exit(3)' : FOREVER),
      restart: { initialBackoffMs: 100, maxBackoffMs: 400, stableAfterMs: 60_000 },
      stopGraceMs: 1000,
      clock,
      onExited: (exit) => exits.push(exit),
    });
    supervisors.push(supervisor);
    return supervisor;
  }

  it('starts a program that keeps exiting again after a doubling wait, capped, and waits the first one again after a stable run', async () => {
    const clock = new ManualClock();
    const exits: SupervisedExit[] = [];
    const mode = { current: 'crash' as 'crash' | 'serve' };
    const supervisor = supervise(mode, clock, exits);

    await supervisor.start();
    for (let n = 1; n <= 4; n++) {
      await eventually(() => exits.length === n);
      const wait = exits[n - 1].restartInMs!;
      expect(clock.pending()).toEqual([wait]);
      expect(supervisor.nextStartAt).toBe(clock.now() + wait);
      expect(supervisor.current).toBeUndefined();
      if (n < 4) clock.advance(wait);
    }
    expect(exits.map((exit) => exit.restartInMs)).toEqual([100, 200, 400, 400]);
    expect(exits.every((exit) => exit.exit.code === 3 && exit.exit.signal === null && exit.process !== undefined)).toBe(true);

    // The fifth start serves; it runs past stableAfterMs, then dies without being asked to.
    mode.current = 'serve';
    clock.advance(400);
    const serving = await eventually(() => supervisor.current);
    expect(supervisor.nextStartAt).toBeUndefined();
    clock.advance(60_000);
    process.kill(serving.pid, 'SIGTERM');
    await eventually(() => exits.length === 5);
    expect(exits[4]).toMatchObject({ process: serving, exit: { code: null, signal: 'SIGTERM' }, ranMs: 60_000, restartInMs: 100 });

    // And the count starts again from there.
    mode.current = 'crash';
    clock.advance(100);
    await eventually(() => exits.length === 6);
    expect(exits[5].restartInMs).toBe(200);
    expect(supervisor.starts).toBe(6);
  });

  it('restart() stops the program and starts it at once with the backoff reset; dispose() stops it for good', async () => {
    const clock = new ManualClock();
    const exits: SupervisedExit[] = [];
    const mode = { current: 'crash' as 'crash' | 'serve' };
    const supervisor = supervise(mode, clock, exits);
    await supervisor.restart();
    expect(supervisor.starts).toBe(0);

    await supervisor.start();
    await eventually(() => exits.length === 1);
    clock.advance(100);
    await eventually(() => exits.length === 2);
    expect(exits[1].restartInMs).toBe(200);

    mode.current = 'serve';
    await supervisor.restart();
    expect(clock.pending()).toEqual([]);
    const first = supervisor.current!;
    expect(isAlive(first.identity)).toBe(true);

    const told: number[] = [];
    await supervisor.restart((running) => told.push(running.pid));
    expect(told).toEqual([first.pid]);
    expect(exits[2]).toMatchObject({ process: first, exit: { signal: 'SIGTERM' }, restartInMs: undefined });
    expect(first.stopRequested).toBe(true);
    const second = supervisor.current!;
    expect(second.pid).not.toBe(first.pid);

    await supervisor.dispose();
    expect(supervisor.current).toBeUndefined();
    expect(exits[3]).toMatchObject({ process: second, restartInMs: undefined });
    expect(groupExists(second.pid)).toBe(false);
    expect(clock.pending()).toEqual([]);
    await supervisor.restart();
    expect(supervisor.current).toBeUndefined();
  });

  it('waits for the readiness check or the exit, whichever comes first, and restarts one that could not be started', async () => {
    const clock = new ManualClock();
    const exits: SupervisedExit[] = [];
    const errors: Error[] = [];
    let ready = false;
    let spec = node(`console.log('listening'); ${FOREVER}`);
    const supervisor = new Supervisor({
      prepare: () => spec,
      ready: async () => {
        await eventually(async () => (await output()).includes('listening'));
        ready = true;
      },
      restart: { initialBackoffMs: 100, maxBackoffMs: 400, stableAfterMs: 60_000 },
      stopGraceMs: 1000,
      clock,
      onExited: (exit) => exits.push(exit),
      onSpawnError: (error) => errors.push(error),
    });
    supervisors.push(supervisor);
    await supervisor.start();
    expect(ready).toBe(true);

    // A readiness check that never ends does not hold up a program that exits.
    spec = node('process.exit(5)');
    const never = new Supervisor({ prepare: () => spec, ready: () => new Promise(() => {}), stopGraceMs: 1000, clock, onExited: (exit) => exits.push(exit) });
    supervisors.push(never);
    await never.start();
    expect(exits.at(-1)).toMatchObject({ exit: { code: 5 }, restartInMs: undefined });

    spec = { ...spec, command: join(dir, 'no-such-program') };
    await supervisor.restart();
    expect(exits.at(-1)).toMatchObject({ process: undefined, exit: { code: null, signal: null }, restartInMs: 100 });
    await eventually(() => errors.length === 1);
    expect(supervisor.starts).toBe(1);
  });
});

describe('leftovers', () => {
  it('finds live group leaders by their command line and environment, and nothing else', async () => {
    const marked = spawn(process.execPath, ['-e', FOREVER, '--', 'leftover-test'], { detached: true, stdio: 'ignore', env: { ...process.env, TEST_MARKER: dir } });
    const unmarked = spawn(process.execPath, ['-e', FOREVER, '--', 'leftover-test'], { detached: true, stdio: 'ignore', env: { ...process.env } });
    // Not a group leader: it is in this test's group.
    const member = spawn(process.execPath, ['-e', FOREVER, '--', 'leftover-test'], { stdio: 'ignore', env: { ...process.env, TEST_MARKER: dir } });
    strays.push(marked, unmarked);
    members.push(member);
    // Until exec, a child shows this process's command line and environment.
    await eventually(() => [marked, unmarked, member].every((child) => readCmdline(child.pid!).includes('leftover-test')));

    const ours = (pid: number) => (environValue(pid, 'TEST_MARKER') === dir ? 'ours' : undefined);
    const found = findGroupLeaders(ours);
    expect(found).toEqual([{ identity: identityOf(marked.pid!), claimed: 'ours' }]);
    expect(groupLeader(marked.pid!, ours)?.identity).toEqual(identityOf(marked.pid!) as ProcessIdentity);
    expect(groupLeader(member.pid!, ours)).toBeUndefined();
    expect(groupLeader(unmarked.pid!, ours)).toBeUndefined();
  });
});
