// Commands run beside a local editor (devcontainer.json's lifecycle commands): real /bin/sh and
// real processes, their output, exit, environment and folder, and their process group ended by
// an abort or by the editor's stop, never anything else.
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isAlive, identityOf } from '../../src/core/procfs.ts';
import type { CommandLine } from '../../src/devcontainer/types.ts';
import type { CommandEnd } from '../../src/runtime/interface.ts';
import { LineSplitter, MAX_LINE_CHARS, ProcessCommands, stillOurs } from '../../src/runtime/process-run.ts';
import { eventually } from '../helpers/wait.ts';

let dir: string;
let commands: ProcessCommands;

beforeEach(async () => {
  dir = await fs.realpath(await fs.mkdtemp(join(tmpdir(), 'devbox-run-')));
  commands = new ProcessCommands({ ...process.env, DEVBOX_SECRET_THING: 'x', SOME_TOKEN: 'y' }, 500);
});
afterEach(async () => {
  await commands.stopAll();
  await fs.rm(dir, { recursive: true, force: true });
});

/** Runs a command for server `web`, collecting its lines. */
function run(command: CommandLine, options: { env?: Record<string, string>; signal?: AbortSignal } = {}) {
  const lines: Array<[string, string]> = [];
  const ended: Promise<CommandEnd> = commands.run('web', command, {
    cwd: dir,
    env: options.env ?? {},
    signal: options.signal ?? new AbortController().signal,
    onOutput: (stream, line) => lines.push([stream, line]),
  });
  return { lines, ended };
}

const pidIn = async (file: string) => Number((await fs.readFile(file, 'utf8')).trim());

describe('ProcessCommands.run', () => {
  it('runs a string through /bin/sh in the workspace and passes its lines, by stream', async () => {
    const { lines, ended } = run({ shell: 'echo one; echo two >&2; printf "no newline"; pwd > where.txt' });
    expect(await ended).toEqual({ exitCode: 0 });
    await eventually(() => lines.length === 3);
    expect(lines).toContainEqual(['stdout', 'one']);
    expect(lines).toContainEqual(['stderr', 'two']);
    expect(lines).toContainEqual(['stdout', 'no newline']);
    expect((await fs.readFile(join(dir, 'where.txt'), 'utf8')).trim()).toBe(dir);
  });

  it('runs an array as the program and its arguments, with no shell', async () => {
    const { lines, ended } = run({ argv: ['/bin/echo', '$HOME; echo', '*'] });
    expect(await ended).toEqual({ exitCode: 0 });
    await eventually(() => lines.length === 1);
    expect(lines[0]).toEqual(['stdout', '$HOME; echo *']);
  });

  it('reports the exit code and the signal that ended it', async () => {
    expect(await run({ shell: 'exit 3' }).ended).toEqual({ exitCode: 3 });
    expect(await run({ shell: 'kill -KILL $$' }).ended).toEqual({ exitCode: null, signal: 'SIGKILL' });
  });

  it('has passed on every line, the last one too, by the time it says how the command ended', async () => {
    // The last words come from a child a moment after the command itself exited.
    const { lines, ended } = run({ shell: 'seq 1 200000; (sleep 0.2; echo "the last words" >&2) & exit 3' });
    expect(await ended).toEqual({ exitCode: 3 });
    expect(lines).toHaveLength(200_001);
    expect(lines.at(-1)).toEqual(['stderr', 'the last words']);
  });

  it('reports a program that cannot start, without throwing', async () => {
    const end = await run({ argv: [join(dir, 'no-such-program')] }).ended;
    expect(end.exitCode).toBeNull();
    expect(end.error).toMatch(/no-such-program: no such program/);
  });

  it("gives the editor's environment (server name, no secrets) with the command's variables over it", async () => {
    const { lines, ended } = run({ shell: 'echo "$DEVBOX_SERVER_NAME|$GREETING|$HOME|${DEVBOX_SECRET_THING:-none}|${SOME_TOKEN:-none}"' }, { env: { GREETING: 'hello', HOME: '/somewhere' } });
    expect(await ended).toEqual({ exitCode: 0 });
    await eventually(() => lines.length === 1);
    expect(lines[0][1]).toBe('web|hello|/somewhere|none|none');
  });

  it('ends the command and everything it started when the signal aborts, and resolves once they are gone', async () => {
    const abort = new AbortController();
    // A child that ignores SIGTERM, so the grace runs out and SIGKILL ends it.
    const { ended } = run({ shell: `sh -c 'trap "" TERM; echo $$ > child.pid; while :; do sleep 0.05; done' & echo $$ > leader.pid; wait` }, { signal: abort.signal });
    const child = await eventually(async () => pidIn(join(dir, 'child.pid')).then((p) => p > 0 && p));
    const leader = await eventually(async () => pidIn(join(dir, 'leader.pid')).then((p) => p > 0 && p));
    const identities = [identityOf(child)!, identityOf(leader)!];
    abort.abort(new Error('the spec changed'));
    const end = await ended;
    expect(end.exitCode).toBeNull();
    expect(end.signal).toBe('SIGTERM');
    for (const identity of identities) expect(isAlive(identity)).toBe(false);
  });

  it('signals no process it did not start', async () => {
    const stranger = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    try {
      const abort = new AbortController();
      const { ended } = run({ shell: 'sleep 30' }, { signal: abort.signal });
      await eventually(() => identityOf(stranger.pid!) !== undefined);
      abort.abort();
      await ended;
      await commands.stop('web');
      expect(isAlive(identityOf(stranger.pid!)!)).toBe(true);
    } finally {
      stranger.kill('SIGKILL');
    }
  });

  it('never takes a process that got a finished group leader\'s number for that group', () => {
    const stranger = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    try {
      const identity = identityOf(stranger.pid!)!;
      expect(stillOurs(identity)).toBe(true);
      // The same number, another start time: what a reused pid looks like.
      expect(stillOurs({ pid: identity.pid, startTicks: identity.startTicks - 1 })).toBe(false);
    } finally {
      stranger.kill('SIGKILL');
    }
  });

  it('leaves what a command started in the background running, its output still read, until the editor stops', async () => {
    const { lines, ended } = run({ shell: `sh -c 'echo $$ > bg.pid; while :; do echo tick; sleep 0.1; done' &` });
    expect(await ended).toEqual({ exitCode: 0 });
    const background = identityOf(await eventually(async () => pidIn(join(dir, 'bg.pid')).then((p) => p > 0 && p)))!;
    const seen = lines.length;
    await eventually(() => lines.length > seen + 1);
    expect(isAlive(background)).toBe(true);
    await commands.stop('web');
    expect(isAlive(background)).toBe(false);
    // Another server's stop touches none of it.
    await commands.stop('other');
  });
});

describe('LineSplitter', () => {
  it('keeps a character split across chunks whole and cuts a line too long into pieces', () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((line) => lines.push(line));
    const euro = Buffer.from('€');
    splitter.write(Buffer.concat([Buffer.from('price '), euro.subarray(0, 1)]));
    splitter.write(Buffer.concat([euro.subarray(1), Buffer.from('\r\n')]));
    splitter.write(Buffer.from('x'.repeat(MAX_LINE_CHARS * 2 + 5)));
    splitter.write(Buffer.from('\n\n'));
    splitter.end();
    expect(lines).toEqual(['price €', 'x'.repeat(MAX_LINE_CHARS), 'x'.repeat(MAX_LINE_CHARS), 'xxxxx', '']);
  });
});
