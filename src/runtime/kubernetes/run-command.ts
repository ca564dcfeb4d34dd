// A command run in a server's editor container (EditorWorkload.run: devcontainer.json's lifecycle
// commands), by exec: in the folder asked (the workspace), with the variables asked over the
// container's own, its output line by line as it comes, its exit code from the exec's status.
//
// Kubernetes' exec has no way to signal what it started, and closing its connection does not end
// the command. So each run carries a variable of its own, DEVBOX_RUN_ID, which everything it
// starts inherits; an abort sends SIGTERM through a second exec to every process of the container
// whose environment has it, then SIGKILL after a grace period. What drops its environment (a
// program started with `env -i`) is not found and is left running, until the editor stops.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import type { CommandLine } from '../../devcontainer/types.ts';
import type { RunOptions } from '../editor-workload.ts';
import type { CommandEnd } from '../interface.ts';
import { messageOf } from './client.ts';
import type { ClusterApi } from './cluster-api.ts';
import { EDITOR_CONTAINER } from './names.ts';

/** The variable that marks a run's processes. */
export const RUN_ID_VARIABLE = 'DEVBOX_RUN_ID';
/** How long a run has between SIGTERM and SIGKILL, and after SIGKILL before its exec is given up. */
const TERM_GRACE_MS = 5000;
const KILL_GRACE_MS = 2000;
/** A longer line is given in pieces of this many characters. */
const MAX_LINE = 16 * 1024;

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `sh -c RUN_SCRIPT sh <cwd> NAME=value… -- program args…`: the variables exported, then the program run in <cwd>. */
export const RUN_SCRIPT = [
  'cd "$1" || exit 126; shift',
  'while [ "$1" != -- ]; do export "$1"; shift; done; shift',
  'exec "$@"',
].join('\n');

/** `sh -c SIGNAL_SCRIPT signal <id> <TERM|KILL>`: signals every process whose environment carries the run's id; prints how many. */
export const SIGNAL_SCRIPT = [
  'n=0',
  'for e in /proc/[0-9]*/environ; do',
  `  if tr '\\000' '\\n' < "$e" 2>/dev/null | grep -qx "${RUN_ID_VARIABLE}=$1"; then p=\${e#/proc/}; kill -s "$2" "\${p%/environ}" 2>/dev/null && n=$((n + 1)); fi`,
  'done',
  'echo "$n"',
].join('\n');

/** The exec's arguments for one command. */
export function runArgv(command: CommandLine, cwd: string, env: Record<string, string>, id: string): string[] {
  const program = 'shell' in command ? ['sh', '-c', command.shell] : command.argv;
  const pairs = Object.entries({ ...env, [RUN_ID_VARIABLE]: id }).map(([name, value]) => `${name}=${value}`);
  return ['sh', '-c', RUN_SCRIPT, 'sh', cwd, ...pairs, '--', ...program];
}

/** A stream cut into lines (a last line without its newline given at the end; `\r\n` as `\n`). */
export function lineWriter(onLine: (line: string) => void): Writable {
  let rest = '';
  const decoder = new TextDecoder();
  const take = (text: string) => {
    rest += text;
    let at: number;
    while ((at = rest.indexOf('\n')) >= 0) {
      onLine(rest.slice(0, at).replace(/\r$/, ''));
      rest = rest.slice(at + 1);
    }
    while (rest.length > MAX_LINE) {
      onLine(rest.slice(0, MAX_LINE));
      rest = rest.slice(MAX_LINE);
    }
  };
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      take(decoder.decode(chunk, { stream: true }));
      callback();
    },
    final(callback) {
      take(decoder.decode());
      if (rest !== '') onLine(rest.replace(/\r$/, ''));
      rest = '';
      callback();
    },
  });
}

/** Runs `command` in the editor container of Pod `pod`, server `name`'s running editor (see the top of this file). */
export async function runInEditor(client: ClusterApi, pod: string | undefined, name: string, command: CommandLine, options: RunOptions): Promise<CommandEnd> {
  if (pod === undefined) return { exitCode: null, error: `the editor of ${name} is not running` };
  const bad = Object.keys(options.env).find((name) => !NAME.test(name));
  if (bad !== undefined) return { exitCode: null, error: `"${bad}" cannot be the name of an environment variable` };
  if ('argv' in command && command.argv.length === 0) return { exitCode: null, error: 'the command is empty' };
  if (options.signal.aborted) return { exitCode: null, signal: 'SIGTERM' };
  const id = randomBytes(8).toString('hex');
  const stdout = lineWriter((line) => options.onOutput('stdout', line));
  const stderr = lineWriter((line) => options.onOutput('stderr', line));
  // The exec's own connection is closed only when the command outlives its SIGKILL.
  const giveUp = new AbortController();
  let sent: 'SIGTERM' | 'SIGKILL' | undefined;
  const signalRun = (signal: 'TERM' | 'KILL') =>
    client.exec(pod, EDITOR_CONTAINER, ['sh', '-c', SIGNAL_SCRIPT, 'signal', id, signal]).catch(() => undefined);
  const onAbort = () => {
    sent = 'SIGTERM';
    void signalRun('TERM');
    setTimeout(() => {
      sent = 'SIGKILL';
      void signalRun('KILL');
      setTimeout(() => giveUp.abort(new Error('the command did not end after SIGKILL')), KILL_GRACE_MS).unref();
    }, TERM_GRACE_MS).unref();
  };
  options.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const result = await client.exec(pod, EDITOR_CONTAINER, runArgv(command, options.cwd, options.env, id), { stdout, stderr, signal: giveUp.signal });
    await Promise.all([endOf(stdout), endOf(stderr)]);
    if (sent) return { exitCode: null, signal: sent };
    return { exitCode: result.code };
  } catch (error) {
    await Promise.all([endOf(stdout), endOf(stderr)]);
    if (sent) return { exitCode: null, signal: sent };
    return { exitCode: null, error: messageOf(error) };
  } finally {
    options.signal.removeEventListener('abort', onAbort);
  }
}

/** Ends a line writer (its last line given) and resolves once it has. */
function endOf(stream: Writable): Promise<void> {
  return new Promise((resolve) => {
    if (stream.writableFinished) return resolve();
    stream.end(() => resolve());
  });
}
