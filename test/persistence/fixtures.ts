// Shared set-up of the snapshot engine's tests: temporary folders removed after each test, an
// engine over a FolderStore, a store that counts (and can hold up) requests, trees of real files
// and a byte-exact description of a tree (names as raw bytes) to compare before and after.
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { SnapshotEngine, type EngineOptions } from '../../src/persistence/engine.ts';
import { FolderStore } from '../../src/persistence/folder-store.ts';
import type { PutOptions, SnapshotRoot, SnapshotSources, SnapshotStore } from '../../src/persistence/types.ts';

/** A fresh temporary folder per call, each removed after the test. */
export function useTempDirs(): () => Promise<string> {
  const made: string[] = [];
  afterEach(async () => {
    await Promise.all(made.splice(0).map(async (dir) => {
      await fs.chmod(dir, 0o700).catch(() => undefined);
      await fs.rm(dir, { recursive: true, force: true });
    }));
  });
  return async () => {
    const dir = await fs.mkdtemp(join(tmpdir(), 'devbox-persist-'));
    made.push(dir);
    return dir;
  };
}

/** Counts what reaches a store; `beforePut` may hold a put up or fail it. */
export class CountingStore implements SnapshotStore {
  readonly inner: SnapshotStore;
  readonly description: string;
  puts: string[] = [];
  putBytes = 0;
  gets: string[] = [];
  beforePut?: (key: string, body: Buffer) => Promise<void> | void;

  constructor(inner: SnapshotStore) {
    this.inner = inner;
    this.description = inner.description;
  }

  reset(): void {
    this.puts = [];
    this.putBytes = 0;
    this.gets = [];
    this.flushes = 0;
    this.sequence = [];
  }

  flushes = 0;
  /** Puts (`put <key>`, `batched put <key>` when their durability waits for a flush) and flushes, in the order they returned. */
  sequence: string[] = [];

  async put(key: string, body: Buffer, signal?: AbortSignal, options?: PutOptions): Promise<void> {
    await this.beforePut?.(key, body);
    this.puts.push(key);
    this.putBytes += body.length;
    await this.inner.put(key, body, signal, options);
    this.sequence.push(`${options?.batch ? 'batched put' : 'put'} ${key}`);
  }

  async flush(signal?: AbortSignal): Promise<void> {
    this.flushes++;
    await this.inner.flush?.(signal);
    this.sequence.push('flush');
  }

  get(key: string, signal?: AbortSignal): Promise<Buffer | undefined> {
    this.gets.push(key);
    return this.inner.get(key, signal);
  }

  list(prefix: string, signal?: AbortSignal): Promise<string[]> {
    return this.inner.list(prefix, signal);
  }

  delete(key: string, signal?: AbortSignal): Promise<void> {
    return this.inner.delete(key, signal);
  }
}

export interface Bench {
  storeDir: string;
  cacheDir: string;
  store: CountingStore;
  engine: SnapshotEngine;
  /** Another engine over the same store with an empty cache: a fresh container. */
  freshEngine(options?: Partial<EngineOptions>): Promise<SnapshotEngine>;
}

export async function engineBench(tempDir: () => Promise<string>, options: Partial<EngineOptions> = {}): Promise<Bench> {
  const storeDir = await tempDir();
  const cacheDir = join(await tempDir(), 'persistence');
  const store = new CountingStore(new FolderStore(storeDir));
  return {
    storeDir, cacheDir, store,
    engine: new SnapshotEngine({ store, cacheDir, retryDelaysMs: [], ...options }),
    freshEngine: async (more = {}) => new SnapshotEngine({ store, cacheDir: join(await tempDir(), 'persistence'), retryDelaysMs: [], ...options, ...more }),
  };
}

export function sourcesFor(name: string, workspace: string, more: Partial<SnapshotSources> = {}): SnapshotSources {
  return {
    name,
    uid: `uid-${name}`,
    manifestText: `apiVersion: devbox.dev/v1alpha1\nkind: EditorServer\nmetadata:\n  name: ${name}\n`,
    status: { phase: 'Stopped' },
    roots: [{ id: 'workspace', dir: workspace }],
    exclude: [],
    extensions: ['ms-python.python'],
    ...more,
  };
}

export const workspaceRoot = (dir: string): SnapshotRoot[] => [{ id: 'workspace', dir }];

/** Deterministic bytes: the same seed and length always give the same content. */
export function content(seed: string, length: number): Buffer {
  const out = Buffer.allocUnsafe(length);
  let block = createHash('sha256').update(seed).digest();
  for (let at = 0; at < length; at += block.length) {
    block.copy(out, at, 0, Math.min(block.length, length - at));
    block = createHash('sha256').update(block).digest();
  }
  return out;
}

/** Writes files (`path: bytes or text`), making their folders. */
export async function writeFiles(dir: string, files: Record<string, string | Buffer>): Promise<void> {
  for (const [path, body] of Object.entries(files)) {
    await fs.mkdir(join(dir, path, '..'), { recursive: true });
    await fs.writeFile(join(dir, path), body);
  }
}

export interface TreeEntry {
  type: 'file' | 'dir' | 'link' | 'other';
  mode: number;
  sha256?: string;
  target?: string;
}

/** Every entry below `dir` by its raw path bytes (hex, `/`-joined): type, mode, and content hash or link target. */
export async function describeTree(dir: string): Promise<Map<string, TreeEntry>> {
  const found = new Map<string, TreeEntry>();
  const visit = async (abs: Buffer, rel: string) => {
    for (const name of await fs.readdir(abs, { encoding: 'buffer' }) as Buffer[]) {
      const path = Buffer.concat([abs, Buffer.from('/'), name]);
      const key = rel ? `${rel}/${name.toString('hex')}` : name.toString('hex');
      const stat = await fs.lstat(path);
      const mode = stat.mode & 0o7777;
      if (stat.isDirectory()) {
        found.set(key, { type: 'dir', mode });
        await visit(path, key);
      } else if (stat.isFile()) {
        found.set(key, { type: 'file', mode, sha256: createHash('sha256').update(await fs.readFile(path)).digest('hex') });
      } else if (stat.isSymbolicLink()) {
        found.set(key, { type: 'link', mode: 0, target: (await fs.readlink(path, { encoding: 'buffer' })).toString('hex') });
      } else {
        found.set(key, { type: 'other', mode });
      }
    }
  };
  await visit(Buffer.from(dir), '');
  return found;
}

/** The hex form describeTree uses for a path given as text. */
export const hexPath = (path: string) => path.split('/').map((part) => Buffer.from(part).toString('hex')).join('/');
