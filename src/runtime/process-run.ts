// Commands run beside a local editor (devcontainer.json's lifecycle commands): in the workspace,
// with the editor's environment, each in a process group of its own so that ending it ends
// everything it started, and its output read line by line. A command may leave programs running
// in the background (a postStartCommand's `server &`, as in a container): they keep running, and
// their output keeps being read, until the server's editor stops; stopping the editor stops them.
import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { editorEnvironment } from '../core/child-env.ts';
import { stopProcessGroup } from '../core/process-group.ts';
import { groupExists, identityOf, isAlive, readStat, type ProcessIdentity } from '../core/procfs.ts';
import type { CommandLine } from '../devcontainer/types.ts';
import type { RunOptions } from './editor-workload.ts';
import type { CommandEnd } from './interface.ts';

/** A line longer than this is passed on in pieces of this many characters (a progress bar redrawn with \r never ends its line). */
export const MAX_LINE_CHARS = 4096;
/** How long a command ended by an abort is given after SIGTERM before its group gets SIGKILL. */
export const RUN_GRACE_MS = 3000;
/**
 * How long, after a command exits, its last output is waited for: its exit can come before the
 * pipes are read to the end, and the last line names a failure. Not until they close: what it
 * left in the background may hold them open for as long as it runs.
 */
const DRAIN_MS = 500;

/** The program and arguments a command line runs: a string through /bin/sh -c, an array as it is (no shell). */
export function argvOf(command: CommandLine): [string, string[]] {
  if ('shell' in command) return ['/bin/sh', ['-c', command.shell]];
  const [program, ...args] = command.argv;
  return [program, args];
}

/** Splits a stream's bytes into lines (UTF-8 kept whole across chunks), none longer than MAX_LINE_CHARS. */
export class LineSplitter {
  readonly #decoder = new StringDecoder('utf8');
  readonly #emit: (line: string) => void;
  #pending = '';

  constructor(emit: (line: string) => void) {
    this.#emit = emit;
  }

  write(chunk: Buffer): void {
    this.#take(this.#decoder.write(chunk));
  }

  /** The last line, when it had no newline. */
  end(): void {
    this.#take(this.#decoder.end());
    if (this.#pending !== '') this.#emit(this.#pending);
    this.#pending = '';
  }

  #take(text: string): void {
    const parts = (this.#pending + text).split('\n');
    this.#pending = parts.pop()!;
    for (const part of parts) this.#long(part.endsWith('\r') ? part.slice(0, -1) : part);
    while (this.#pending.length > MAX_LINE_CHARS) {
      this.#emit(this.#pending.slice(0, MAX_LINE_CHARS));
      this.#pending = this.#pending.slice(MAX_LINE_CHARS);
    }
  }

  #long(line: string): void {
    for (let at = 0; at < line.length || at === 0; at += MAX_LINE_CHARS) this.#emit(line.slice(at, at + MAX_LINE_CHARS));
  }
}

/** A command's process group still held for its server: the group's leader, as it was started. */
interface Group {
  leader: ProcessIdentity;
  /** Ends the reading of its output (the pipes of what it left running). */
  close(): void;
}

/** The commands run for each server whose groups may still have members, so a stop of the editor ends them. */
export class ProcessCommands {
  readonly #env: NodeJS.ProcessEnv;
  readonly #graceMs: number;
  readonly #groups = new Map<string, Set<Group>>();

  constructor(env: NodeJS.ProcessEnv, graceMs = RUN_GRACE_MS) {
    this.#env = env;
    this.#graceMs = graceMs;
  }

  /**
   * Runs the command for server `name` until it exits or the signal aborts (then its group gets
   * SIGTERM, SIGKILL after the grace). Never rejects: a command that cannot start ends with
   * exitCode null and `error`.
   */
  run(name: string, command: CommandLine, options: RunOptions): Promise<CommandEnd> {
    const [program, args] = argvOf(command);
    if (options.signal.aborted) return Promise.resolve({ exitCode: null, error: 'cancelled before it started' });
    return new Promise<CommandEnd>((resolve) => {
      const child = spawn(program, args, {
        cwd: options.cwd,
        env: { ...editorEnvironment(this.#env, name), ...options.env },
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let ended = false;
      let abort = () => {};
      const finish = (end: CommandEnd) => {
        if (ended) return;
        ended = true;
        options.signal.removeEventListener('abort', abort);
        resolve(end);
      };
      child.once('error', (error) => finish({ exitCode: null, error: `${program}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such program or folder' : error.message}` }));
      if (child.pid === undefined) return; // 'error' says why
      // Read at once: the pid is our child's until Node.js reaps it, after this tick at the earliest.
      const leader = identityOf(child.pid) ?? { pid: child.pid, startTicks: -1 };
      const splitters = [follow(child.stdout!, 'stdout', options), follow(child.stderr!, 'stderr', options)];
      const group: Group = {
        leader,
        close: () => {
          for (const stream of [child.stdout!, child.stderr!]) stream.destroy();
          this.#forget(name, group);
        },
      };
      this.#hold(name, group);
      // Both pipes closed: nothing in the group writes any more; what is left (if anything) is
      // ended with the editor.
      let open = 2;
      let drained = () => {};
      const closed = new Promise<void>((resolve) => (drained = resolve));
      for (const stream of [child.stdout!, child.stderr!]) {
        stream.once('close', () => {
          if (--open === 0) {
            for (const splitter of splitters) splitter.end();
            if (!groupExists(leader.pid)) this.#forget(name, group);
            drained();
          }
        });
      }
      // Ended by the abort: it resolves once the whole group is gone, not only its leader.
      let stopping: Promise<void> | undefined;
      abort = () => {
        // Unreaped, the leader's number is ours; once reaped, only while the group is still its.
        const ours = stillOurs(leader) || (child.exitCode === null && child.signalCode === null);
        stopping = (ours ? stopProcessGroup(leader, this.#graceMs) : Promise.resolve()).then(() => group.close());
      };
      options.signal.addEventListener('abort', abort, { once: true });
      child.once('exit', (code, signal) => {
        const end: CommandEnd = code !== null ? { exitCode: code } : { exitCode: null, signal: signal ?? undefined };
        let timer: NodeJS.Timeout | undefined;
        const read = Promise.race([closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, DRAIN_MS)))]).finally(() => clearTimeout(timer));
        void Promise.all([read, stopping]).then(() => {
          // Reaped now: a group with no member left is forgotten (its number may be another's one day).
          if (!groupExists(leader.pid)) this.#forget(name, group);
          finish(end);
        });
      });
    });
  }

  /** Ends what the commands run for server `name` left running (its editor stops). */
  async stop(name: string): Promise<void> {
    const groups = [...(this.#groups.get(name) ?? [])];
    await Promise.all(groups.map(async (group) => {
      if (stillOurs(group.leader)) await stopProcessGroup(group.leader, this.#graceMs);
      group.close();
    }));
  }

  /** Ends everything every command left running (the service stops its editors). */
  async stopAll(): Promise<void> {
    await Promise.all([...this.#groups.keys()].map((name) => this.stop(name)));
  }

  #hold(name: string, group: Group): void {
    let groups = this.#groups.get(name);
    if (!groups) this.#groups.set(name, (groups = new Set()));
    groups.add(group);
  }

  #forget(name: string, group: Group): void {
    const groups = this.#groups.get(name);
    groups?.delete(group);
    if (groups?.size === 0) this.#groups.delete(name);
  }
}

/**
 * True while the group is still the one the command started: its leader itself (pid and start
 * time), or, the leader gone, the members it left (the kernel gives no process that number while
 * the group lives). A process under the leader's number that is not the leader means the group
 * ended and the number went to another: never signalled.
 */
export function stillOurs(leader: ProcessIdentity): boolean {
  if (isAlive(leader)) return true;
  if (readStat(leader.pid) !== undefined) return false;
  return groupExists(leader.pid);
}

function follow(stream: Readable, which: 'stdout' | 'stderr', options: RunOptions): LineSplitter {
  const splitter = new LineSplitter((line) => options.onOutput(which, line));
  stream.on('data', (chunk: Buffer) => splitter.write(chunk));
  stream.on('error', () => undefined);
  return splitter;
}
