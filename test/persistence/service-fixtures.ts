// What the persistence service's tests share: a hash of every file under a folder (to say two
// trees are byte-identical), waiting for a record's status word, and the real service as a
// process (`node src/main.ts`), signalled and killed as a platform does.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { join, relative } from 'node:path';
import { eventually, request, STUB_EDITOR, type TestService } from '../helpers/service.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const NODE = join(ROOT, 'node_modules/.bin/node');

/** Every regular file under `dir` (links as `-> target`), by path relative to it, with its sha256. */
export async function hashTree(dir: string): Promise<Map<string, string>> {
  const hashes = new Map<string, string>();
  const visit = async (at: string): Promise<void> => {
    for (const entry of await fs.readdir(at, { withFileTypes: true }).catch(() => [])) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) await visit(path);
      else if (entry.isSymbolicLink()) hashes.set(relative(dir, path), `-> ${await fs.readlink(path)}`);
      else if (entry.isFile()) hashes.set(relative(dir, path), createHash('sha256').update(await fs.readFile(path)).digest('hex'));
    }
  };
  await visit(dir);
  return hashes;
}

/** A hash map as sorted entries, so a difference reads well in a failed expectation. */
export function sorted(hashes: Map<string, string>): Array<[string, string]> {
  return [...hashes].sort(([a], [b]) => (a < b ? -1 : 1));
}

/** Waits until the server's record says `status` (running, stopped …) and returns the record. */
export function recordWhen(base: string | TestService, id: string, status: string, timeoutMs = 20_000): Promise<any> {
  const url = typeof base === 'string' ? base : base.url;
  return eventually(async () => {
    const { body } = await request(url, 'GET', `/servers/${id}`);
    return body?.status === status ? body : undefined;
  }, timeoutMs);
}

/** Waits until the server is restored (condition Restored True) and settled in `phase` (Running, Stopped). */
export function restoredWhen(base: string | TestService, id: string, phase: 'Running' | 'Stopped', timeoutMs = 30_000): Promise<any> {
  const url = typeof base === 'string' ? base : base.url;
  return eventually(async () => {
    const { body } = await request(url, 'GET', `/servers/${id}`);
    const restored = body?.conditions?.some((c: { type: string; status: string }) => c.type === 'Restored' && c.status === 'True');
    return restored && body.phase === phase ? body : undefined;
  }, timeoutMs);
}

/** Writes `count` files of `bytes` each under dir, spread over folders of 100. */
export async function writeFiles(dir: string, count: number, bytes: number, tag: string): Promise<void> {
  for (let i = 0; i < count; i += 100) {
    const folder = join(dir, `batch-${i / 100}`);
    await fs.mkdir(folder, { recursive: true });
    await Promise.all(Array.from({ length: Math.min(100, count - i) }, (_, j) =>
      fs.writeFile(join(folder, `file-${i + j}.txt`), `${tag} ${i + j} `.padEnd(bytes, String.fromCharCode(97 + ((i + j) % 26))))));
  }
}

export interface ServiceProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<{ code: number | null; signal: string | null }>;
}

/** The service as `npm start` runs it (src/main.ts under Node 22), serving once it logs its address. */
export async function spawnService(root: string, env: NodeJS.ProcessEnv): Promise<ServiceProcess> {
  const child = spawn(NODE, ['--disable-warning=DEP0060', join(ROOT, 'src/main.ts')], {
    cwd: root,
    env: {
      ...process.env, DEVBOX_HOST: '127.0.0.1', DEVBOX_PORT: '0', DEVBOX_EDITOR_BIN: STUB_EDITOR,
      DEVBOX_MANIFESTS_DIR: join(root, 'manifests'), DEVBOX_DATA_DIR: join(root, 'data'), ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const url = await eventually(() => {
    if (child.exitCode !== null) throw new Error(`the service exited: ${output}`);
    return /serving on (http:\/\/\S+)/.exec(output)?.[1];
  }, 30_000);
  return { child, url, output: () => output, exited };
}
