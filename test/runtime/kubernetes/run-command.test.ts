// EditorWorkload.run on the Kubernetes runtime (run-command.ts) over the in-memory cluster, whose
// exec here runs what it is given on this machine, as the editor's container would: the wrapper
// script, the variables, the folder, the output line by line, the exit code, and an abort that
// ends the command and what it started. On the test cluster: test/kubernetes/devcontainer-on-cluster.test.ts.
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { ExecResult } from '../../../src/runtime/kubernetes/cluster-api.ts';
import { lineWriter } from '../../../src/runtime/kubernetes/run-command.ts';
import type { KubernetesWorkload } from '../../../src/runtime/kubernetes/runtime.ts';
import { FakeCluster, runtimeOn } from '../../helpers/fake-cluster.ts';
import { eventually } from '../../helpers/wait.ts';

let runtime: KubernetesWorkload<FakeCluster> | undefined;
afterEach(() => runtime?.dispose());

/** The fake cluster's exec, run on this machine: what the editor's container would run. */
function execHere(cluster: FakeCluster, execs: string[][]): void {
  cluster.execHandler = (_pod, _container, command, _stdin, stdout?: Writable, stderr?: Writable) => new Promise<ExecResult>((resolve) => {
    execs.push(command);
    const child = spawn(command[0], command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => (stdout ? stdout.write(chunk) : out.push(chunk)));
    child.stderr.on('data', (chunk: Buffer) => stderr?.write(chunk));
    child.on('close', (code, signal) => resolve({ code: code ?? 128 + (signal === 'SIGKILL' ? 9 : 15), stdout: Buffer.concat(out), stderr: '' }));
  });
}

/** A server whose editor runs in the fake cluster. */
async function running(cluster: FakeCluster) {
  runtime = await runtimeOn(cluster);
  const starting = runtime.start({ name: 'alpha', port: 8123 });
  const pod = await eventually(() => cluster.pod('devbox-alpha-0'));
  cluster.schedule(pod.metadata!.name!);
  cluster.runEditor(pod.metadata!.name!);
  return (await starting).ref;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("a command in the editor's container", () => {
  it('runs in the folder given with the variables given, its output line by line as it comes, its exit code from the exec', async () => {
    const cluster = new FakeCluster();
    const execs: string[][] = [];
    execHere(cluster, execs);
    const ref = await running(cluster);
    const folder = await fs.mkdtemp(join(tmpdir(), 'devbox-run-'));
    try {
      const lines: string[] = [];
      const end = await runtime!.run('alpha', ref, { shell: 'echo "in $(pwd) as $GREETING"; echo oops >&2; printf "a\\r\\nb"; exit 7' }, {
        cwd: folder, env: { GREETING: 'hello world' }, signal: new AbortController().signal, onOutput: (stream, line) => lines.push(`${stream}: ${line}`),
      });
      expect(end).toEqual({ exitCode: 7 });
      expect(lines.filter((l) => l.startsWith('stdout'))).toEqual([`stdout: in ${await fs.realpath(folder)} as hello world`, 'stdout: a', 'stdout: b']);
      expect(lines).toContain('stderr: oops');
      expect(execs[0].slice(0, 2)).toEqual(['sh', '-c']);

      // The array form: no shell, the words as they are.
      lines.length = 0;
      expect(await runtime!.run('alpha', ref, { argv: ['printf', '%s|', '$HOME', 'two words'] }, { cwd: folder, env: {}, signal: new AbortController().signal, onOutput: (_s, line) => lines.push(line) })).toEqual({ exitCode: 0 });
      expect(lines).toEqual(['$HOME|two words|']);
    } finally {
      await fs.rm(folder, { recursive: true, force: true });
    }
  });

  it('ends, when aborted, the command and what it started, by the variable they carry', async () => {
    const cluster = new FakeCluster();
    const execs: string[][] = [];
    execHere(cluster, execs);
    const ref = await running(cluster);
    const lines: string[] = [];
    const abort = new AbortController();
    const ending = runtime!.run('alpha', ref, { shell: 'sleep 600 & echo "child $!"; echo "self $$"; wait' }, {
      cwd: tmpdir(), env: {}, signal: abort.signal, onOutput: (_s, line) => lines.push(line),
    });
    await eventually(() => lines.length === 2);
    const pids = lines.map((line) => Number(line.split(' ')[1]));
    expect(pids.every(alive)).toBe(true);
    abort.abort();
    expect(await ending).toEqual({ exitCode: null, signal: 'SIGTERM' });
    await eventually(() => !pids.some(alive), 10_000);
    expect(execs.some((command) => command.includes('signal') && command.includes('TERM')), 'a second exec signalled it').toBe(true);
  });

  it('says why it cannot run: no running editor of that reference, a variable name the shell refuses', async () => {
    const cluster = new FakeCluster();
    const execs: string[][] = [];
    execHere(cluster, execs);
    const ref = await running(cluster);
    const options = { cwd: '/', env: {}, signal: new AbortController().signal, onOutput: () => undefined };
    expect(await runtime!.run('alpha', { ...ref, uid: 'another' }, { argv: ['true'] }, options)).toEqual({ exitCode: null, error: 'the editor of alpha is not running' });
    expect(await runtime!.run('beta', ref, { argv: ['true'] }, options)).toMatchObject({ exitCode: null, error: expect.stringContaining('not running') });
    expect(await runtime!.run('alpha', ref, { argv: ['true'] }, { ...options, env: { 'NOT-A-NAME': '1' } })).toMatchObject({ exitCode: null, error: expect.stringContaining('NOT-A-NAME') });
    expect(execs).toEqual([]);
  });
});

describe('the lines of an output', () => {
  it('are cut at newlines across chunks, a long one in pieces, the last one given at the end', async () => {
    const lines: string[] = [];
    const writer = lineWriter((line) => lines.push(line));
    writer.write(Buffer.from('one\ntw'));
    // A character cut between two chunks.
    writer.write(Buffer.concat([Buffer.from('o\r\n'), Buffer.from('\u00e9').subarray(0, 1)]));
    writer.write(Buffer.from('\u00e9').subarray(1));
    writer.write(Buffer.from(`${'x'.repeat(20_000)}`));
    await new Promise<void>((resolve) => writer.end(resolve));
    expect(lines).toEqual(['one', 'two', `é${'x'.repeat(16 * 1024 - 1)}`, 'x'.repeat(20_000 - 16 * 1024 + 1)]);
  });
});
