// Real git repositories for the tests, made in a temp folder and served over loopback by
// `git daemon` (git's own protocol), so clones go through the network code path.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { createServer, connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { eventually } from '../helpers/wait.ts';

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.invalid', '-c', 'init.defaultBranch=main', ...args], { cwd, stdio: 'pipe' });

/** A repository at `dir` holding these files (paths relative to it, folders made as needed), committed on main. */
export async function commitRepository(dir: string, files: Record<string, string>): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    await fs.mkdir(join(dir, path, '..'), { recursive: true });
    await fs.writeFile(join(dir, path), text);
  }
  git(dir, 'init', '-q');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'first');
}

/** A repository at base/name with README.md on main and notes.txt on the branch "feature". */
export async function makeRepo(base: string, name: string): Promise<string> {
  const dir = join(base, name);
  await fs.mkdir(dir, { recursive: true });
  git(dir, 'init', '-q');
  await fs.writeFile(join(dir, 'README.md'), `# ${name}\n`);
  await fs.mkdir(join(dir, 'src'));
  await fs.writeFile(join(dir, 'src', 'main.py'), 'print("hello")\n');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'first');
  git(dir, 'checkout', '-q', '-b', 'feature');
  await fs.writeFile(join(dir, 'notes.txt'), 'on feature\n');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'feature');
  git(dir, 'checkout', '-q', 'main');
  return dir;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface GitDaemon { port: number; url(name: string): string; stop(): Promise<void> }

/** `git daemon` serving every repository under base on a loopback port; stop() ends it. */
export async function serveGitDaemon(base: string, port?: number): Promise<GitDaemon> {
  const chosen = port ?? await freePort();
  const child: ChildProcess = spawn('git', ['daemon', '--export-all', '--reuseaddr', `--base-path=${base}`, '--listen=127.0.0.1', `--port=${chosen}`, base], { stdio: 'ignore' });
  await eventually(() => new Promise<boolean>((resolve) => {
    const socket = connect(chosen, '127.0.0.1', () => { socket.destroy(); resolve(true); });
    socket.on('error', () => resolve(false));
  }), 10_000);
  return {
    port: chosen,
    url: (name) => `git://127.0.0.1:${chosen}/${name}`,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

export { freePort };

/** A git server that accepts connections and never answers: a clone from it runs until aborted. */
export async function stalledGitServer() {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  });
  let reached = 0;
  server.on('connection', () => (reached += 1));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `git://127.0.0.1:${port}/project`,
    reached: () => eventually(() => reached > 0, 10_000).then(() => undefined),
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
