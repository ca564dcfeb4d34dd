// A person's program listening on a port (test/fixtures/port-program.mjs), started as if inside a
// server's editor (its DEVBOX_SERVER_NAME) or outside any, for the forwarded ports' tests.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { SERVER_NAME_VARIABLE } from '../../src/core/child-env.ts';

const PROGRAM = new URL('../fixtures/port-program.mjs', import.meta.url).pathname;

export interface PortProgram {
  port: number;
  pid: number;
  stop(): Promise<void>;
}

/** Starts the program and resolves once it listens; `server` undefined: a program of no server. */
export async function startPortProgram(options: { server?: string; host?: string; port?: number; reusePort?: boolean } = {}): Promise<PortProgram> {
  const env = { ...process.env };
  delete env[SERVER_NAME_VARIABLE];
  if (options.server !== undefined) env[SERVER_NAME_VARIABLE] = options.server;
  const args = [PROGRAM, options.host ?? '127.0.0.1', String(options.port ?? 0), ...(options.reusePort ? ['reuse'] : [])];
  const child: ChildProcess = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`the port program exited with ${code} before it listened`)));
  });
  return {
    port,
    pid: child.pid!,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}
