// Snapshots and restores of a 2,000-file, 50 MB workspace (`src/persistence/engine.ts`) side by
// side with `tar`, restic and borg on the same tree: a full snapshot to a folder, an incremental
// one after 10 files change, and a restore into an empty folder, every side in each round in
// turn (a different one first each round), medians. The floors: `tar -cf` followed by one
// `fsync` of its archive (a snapshot is durable before its index names it), and `tar -xf`
// followed by one `sync` (every restore here is followed by one). Also: reading and hashing
// every file on one thread, and `tar -cf` with no flush. The engine's worker threads are the
// process's: started once large work keeps coming (in the second round), running after; a full
// snapshot by an engine with no worker running (a lone one, done on the event loop's thread) is
// measured beside. `throughStore` measures the same work through any SnapshotStore: here the
// loopback fake of the Files API with 20 ms added to each request.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { SnapshotEngine } from '../src/persistence/engine.ts';
import { FolderStore } from '../src/persistence/folder-store.ts';
import { contentHash } from '../src/persistence/hash.ts';
import { WorkPool } from '../src/persistence/work-pool.ts';
import type { SnapshotSources, SnapshotStore } from '../src/persistence/types.ts';
import { median, round } from './harness.ts';
import { ensurePeers, PEERS, type Peer } from './peers.ts';

const FILES = 2000;
const LARGE = [3, 2.5, 2.5, 2, 2, 2, 1.5, 1.5, 1.5, 1.5].map((mb) => Math.round(mb * 1024 * 1024)); // 20 MiB in 10 files
const TOTAL = 50 * 1024 * 1024;

/** Deterministic bytes, a quarter of them text-like (source code), the rest random. */
function bytesFor(seed: number, length: number): Buffer {
  if (seed % 4 === 0) {
    const line = `export function f${seed}(value: number): number { return value * ${seed}; }\n`;
    return Buffer.from(line.repeat(Math.ceil(length / line.length)).slice(0, length));
  }
  const out = Buffer.allocUnsafe(length);
  let block = createHash('sha256').update(String(seed)).digest();
  for (let at = 0; at < length; at += 32) {
    block.copy(out, at, 0, Math.min(32, length - at));
    if ((at & 4095) === 0) block = createHash('sha256').update(block).digest();
    else block[at & 31] ^= at & 0xff;
  }
  return out;
}

/** 2,000 files, 50 MB: 10 large (1.5–3 MiB) and 1,990 small of 1–25 kB, in 40 folders, last changed an hour ago. */
export async function buildBenchTree(dir: string): Promise<string[]> {
  const smallCount = FILES - LARGE.length;
  const smallTotal = TOTAL - LARGE.reduce((a, b) => a + b, 0);
  const weights = Array.from({ length: smallCount }, (_, i) => 1 + ((i * 7919) % 25));
  const weightSum = weights.reduce((a, b) => a + b, 0);
  const paths: string[] = [];
  for (let i = 0; i < FILES; i++) {
    const large = i < LARGE.length;
    const path = large ? `data/blob-${i}.bin` : `src/pkg${i % 40}/module-${i}.${i % 4 === 0 ? 'ts' : 'bin'}`;
    const size = large ? LARGE[i] : Math.floor((weights[i - LARGE.length] / weightSum) * smallTotal);
    await fs.mkdir(join(dir, path, '..'), { recursive: true });
    await fs.writeFile(join(dir, path), bytesFor(i, size));
    paths.push(path);
  }
  const anHourAgo = new Date(Date.now() - 3600_000);
  await Promise.all(paths.map((path) => fs.utimes(join(dir, path), anHourAgo, anHourAgo)));
  return paths;
}

/** Rewrites 10 of the small files with new content (as an editing session does). */
async function changeTen(dir: string, paths: string[], round: number): Promise<void> {
  for (let i = 0; i < 10; i++) {
    const path = paths[LARGE.length + ((round * 97 + i * 131) % (paths.length - LARGE.length))];
    await fs.writeFile(join(dir, path), bytesFor(1_000_000 + round * 10 + i, 8000));
  }
}

/** A running server's sources: its engine keeps a change journal of the tree between snapshots (`watch`). */
const sources = (dir: string): SnapshotSources => ({
  name: 'bench', uid: 'bench', manifestText: 'kind: EditorServer\n', status: {}, extensions: [], exclude: [],
  roots: [{ id: 'workspace', dir }], watch: true,
});

async function timed<T>(work: () => Promise<T> | T): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { ms: performance.now() - started, value };
}

/** `timed`, and the longest the event loop was held up meanwhile (what an editor's request through the proxy would wait). */
async function timedWithStall<T>(work: () => Promise<T>, stalls: number[]): Promise<{ ms: number; value: T }> {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  try {
    return await timed(work);
  } finally {
    delay.disable();
    stalls.push(delay.max / 1e6);
  }
}

/** A sha256 over every file's path and content: the same for two trees with the same files. */
async function treeDigest(dir: string): Promise<string> {
  const hash = createHash('sha256');
  const files = (await fs.readdir(dir, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name)).sort();
  for (const file of files) hash.update(file.slice(dir.length)).update(await fs.readFile(file));
  return hash.digest('hex');
}

export async function benchPersistence(rounds: number) {
  const { ready, skipped: peersSkipped } = ensurePeers();
  const root = await fs.mkdtemp(join(tmpdir(), 'devbox-bench-persist-'));
  try {
    const tree = join(root, 'tree');
    const paths = await buildBenchTree(tree);
    const tarCf: number[] = [];
    const tarCfSync: number[] = [];
    const sha256Only: number[] = [];
    const hashOnly: number[] = [];
    const full: number[] = [];
    const fullAlone: number[] = [];
    const incrementalFromDisk: number[] = [];
    const stallFull: number[] = [];
    const stallIncremental: number[] = [];
    const stallRestore: number[] = [];
    const incremental: number[] = [];
    const incrementalWalked: number[] = [];
    const tarXf: number[] = [];
    const tarXfSync: number[] = [];
    const restore: number[] = [];
    const restoreSync: number[] = [];
    const peerFigures = new Map<string, { version: string; full: number[]; incremental: number[]; restoreSync: number[] }>();
    let uploadedIncremental = 0;
    for (let r = 0; r < rounds; r++) {
      const work = join(root, `round-${r}`);
      await fs.mkdir(work);
      const archive = join(work, 'tree.tar');
      const engine = new SnapshotEngine({ store: new FolderStore(join(work, 'store')), cacheDir: join(work, 'cache') });
      await fs.mkdir(join(work, 'store'));
      // restic and borg, each with a repository of its own for the round (empty, as the engine's store is).
      const peers: Peer[] = [];
      for (const tool of ready) {
        if (peersSkipped.some((skip) => skip.name === tool.name)) continue;
        const dir = join(work, tool.name);
        await fs.mkdir(dir);
        try {
          const peer = PEERS[tool.name](dir);
          peers.push(peer);
          if (!peerFigures.has(peer.name)) peerFigures.set(peer.name, { version: peer.version, full: [], incremental: [], restoreSync: [] });
        } catch (error) {
          peersSkipped.push({ name: tool.name, why: (error as Error).message });
        }
      }
      // A peer whose command fails is measured no further (and said why); the others go on.
      // borg drops the files it has read from the page cache (posix_fadvise DONTNEED), so the tree is read back into it after each tool, untimed: every side reads it from memory.
      const peerStep = (peer: Peer, figure: 'full' | 'incremental' | 'restoreSync', work: () => void) => () => {
        if (peersSkipped.some((skip) => skip.name === peer.name)) return;
        settle();
        try {
          peerFigures.get(peer.name)![figure].push(timedSync(work));
        } catch (error) {
          peersSkipped.push({ name: peer.name, why: (error as Error).message });
        }
        for (const path of paths) readFileSync(join(tree, path));
      };

      // The full snapshot, side by side: tar (its archive flushed to disk once, the floor; and
      // not flushed), this engine, a lone engine (no worker running), restic and borg.
      await inTurn(r, [
        () => {
          settle();
          tarCf.push(timedSync(() => execFileSync('tar', ['-cf', archive, '-C', tree, '.'])));
        },
        () => {
          settle();
          tarCfSync.push(timedSync(() => execFileSync('sh', ['-c', 'tar -cf "$1" -C "$2" . && sync "$1"', 'sh', join(work, 'synced.tar'), tree])));
        },
        async () => {
          settle();
          full.push((await timedWithStall(() => engine.snapshot(sources(tree), 'bench'), stallFull)).ms);
        },
        // The same full snapshot by an engine whose workers are not running (a lone full snapshot, as a service's first one).
        async () => {
          const idlePool = new WorkPool(2, 30_000);
          const engineAlone = new SnapshotEngine({ store: new FolderStore(join(work, 'store-alone')), cacheDir: join(work, 'cache-alone'), pool: idlePool });
          await fs.mkdir(join(work, 'store-alone'));
          settle();
          fullAlone.push((await timed(() => engineAlone.snapshot(sources(tree), 'bench'))).ms);
          await idlePool.close();
        },
        ...peers.map((peer) => peerStep(peer, 'full', () => peer.backup(tree))),
      ]);
      // What hashing costs: every file read and hashed in one thread (SHA-256, and the engine's BLAKE3).
      settle();
      sha256Only.push(timedSync(() => {
        for (const path of paths) createHash('sha256').update(readFileSync(join(tree, path))).digest();
      }));
      settle();
      hashOnly.push(timedSync(() => {
        for (const path of paths) contentHash(readFileSync(join(tree, path)));
      }));

      // The same change, snapshotted by this engine (its change journal running since the full
      // snapshot), by one that walks every folder (no journal), and backed up again by restic
      // (its previous snapshot as the parent) and borg (a second archive in the same repository).
      const walking = new SnapshotEngine({ store: new FolderStore(join(work, 'store-walk')), cacheDir: join(work, 'cache-walk'), journal: false });
      await fs.mkdir(join(work, 'store-walk'));
      await walking.snapshot(sources(tree), 'bench');
      await changeTen(tree, paths, r);
      await inTurn(r, [
        async () => {
          settle();
          const inc = await timedWithStall(() => engine.snapshot(sources(tree), 'bench'), stallIncremental);
          incremental.push(inc.ms);
          uploadedIncremental = inc.value.snapshot.uploadedBytes;
        },
        async () => {
          settle();
          incrementalWalked.push((await timed(() => walking.snapshot(sources(tree), 'bench'))).ms);
        },
        ...peers.map((peer) => peerStep(peer, 'incremental', () => peer.backup(tree))),
      ]);
      // The same by an engine that starts from the local cache on disk (a service just restarted: the previous index not in memory, no change journal yet, every folder walked).
      await changeTen(tree, paths, r + rounds);
      const again = new SnapshotEngine({ store: new FolderStore(join(work, 'store')), cacheDir: join(work, 'cache') });
      settle();
      incrementalFromDisk.push((await timed(() => again.snapshot(sources(tree), 'bench'))).ms);

      // Restores into empty folders, each followed by one `sync`: tar -xf writes into the page
      // cache only, and so do the engine's restore, restic's and borg's.
      const untarred = join(work, 'untarred');
      const restored = join(work, 'restored');
      await fs.mkdir(untarred);
      const fresh = new SnapshotEngine({ store: new FolderStore(join(work, 'store')), cacheDir: join(work, 'cache-2') });
      await inTurn(r, [
        () => {
          settle();
          let untarMs = 0;
          tarXfSync.push(timedSync(() => {
            untarMs = timedSync(() => execFileSync('tar', ['-xf', archive, '-C', untarred]));
            execFileSync('sync');
          }));
          tarXf.push(untarMs);
        },
        async () => {
          settle();
          const started = performance.now();
          restore.push((await timedWithStall(() => fresh.restore('bench', { roots: [{ id: 'workspace', dir: restored }] }), stallRestore)).ms);
          execFileSync('sync');
          restoreSync.push(performance.now() - started);
        },
        ...peers.map((peer) => {
          const target = join(work, `${peer.name}-restored`);
          return peerStep(peer, 'restoreSync', () => {
            execFileSync('mkdir', [target]);
            peer.restore(target);
            execFileSync('sync');
          });
        }),
      ]);
      if (r === 0 && (await treeDigest(restored)) !== (await treeDigest(tree))) throw new Error('the restored tree differs from the snapshot taken');
      for (const used of [engine, again, fresh]) used.close();
    }
    const peersOut = Object.fromEntries([...peerFigures].filter(([, figures]) => figures.full.length > 0).map(([name, figures]) => [name, {
      version: figures.version,
      full_median_ms: round(median(figures.full)), incremental_median_ms: round(median(figures.incremental)),
      restore_then_sync_median_ms: round(median(figures.restoreSync)),
      // The project's figure ÷ this tool's, the same rounds: below 1, the project is ahead.
      full_ratio: round(median(full) / median(figures.full)),
      incremental_ratio: round(median(incremental) / median(figures.incremental), 3),
      restore_ratio: round(median(restoreSync) / median(figures.restoreSync)),
    }]));
    return {
      files: FILES, mb: TOTAL / 1024 / 1024, rounds,
      full_snapshot_median_ms: round(median(full)),
      tar_cf_then_fsync_median_ms: round(median(tarCfSync)), full_vs_tar_cf_then_fsync: round(median(full) / median(tarCfSync)),
      tar_cf_median_ms: round(median(tarCf)), full_vs_tar_cf: round(median(full) / median(tarCf)),
      tar_cf_then_fsync_vs_tar_cf: round(median(tarCfSync) / median(tarCf)),
      read_and_sha256_median_ms: round(median(sha256Only)), read_and_sha256_vs_tar_cf_then_fsync: round(median(sha256Only) / median(tarCfSync)),
      read_and_hash_median_ms: round(median(hashOnly)), read_and_hash_vs_tar_cf_then_fsync: round(median(hashOnly) / median(tarCfSync)),
      full_snapshot_alone_median_ms: round(median(fullAlone)), full_alone_vs_tar_cf_then_fsync: round(median(fullAlone) / median(tarCfSync)),
      incremental_median_ms: round(median(incremental)), incremental_uploaded_bytes: uploadedIncremental,
      incremental_vs_full: round(median(incremental) / median(full), 3),
      incremental_every_folder_walked_median_ms: round(median(incrementalWalked)), incremental_every_folder_walked_vs_full: round(median(incrementalWalked) / median(full), 3),
      incremental_from_disk_cache_median_ms: round(median(incrementalFromDisk)), incremental_from_disk_cache_vs_full: round(median(incrementalFromDisk) / median(full), 3),
      restore_median_ms: round(median(restore)), restore_then_sync_median_ms: round(median(restoreSync)),
      tar_xf_median_ms: round(median(tarXf)), tar_xf_then_sync_median_ms: round(median(tarXfSync)),
      restore_then_sync_vs_tar_xf_then_sync: round(median(restoreSync) / median(tarXfSync)),
      peers: peersOut,
      ...(peersSkipped.length > 0 && { peers_skipped: peersSkipped }),
      event_loop_longest_stall_ms: {
        full: round(Math.max(...stallFull)), incremental: round(Math.max(...stallIncremental)), restore: round(Math.max(...stallRestore)),
        full_median_round: round(median(stallFull)), incremental_median_round: round(median(stallIncremental)), restore_median_round: round(median(stallRestore)),
      },
    };
  } finally {
    await fs.rm(root, { recursive: true, force: true });
  }
}

/** Runs the steps of one round one after the other, starting from a different one each round, so no side always goes first. */
async function inTurn(round: number, steps: Array<() => unknown>): Promise<void> {
  for (let i = 0; i < steps.length; i++) await steps[(round + i) % steps.length]();
}

/**
 * Writes dirty pages out before a measured step, so no step pays for the writeback of the one
 * before it. (Rounds keep their files until the end: deleting hundreds of MB between steps, on
 * a disk mounted with `discard`, slowed whatever came next by several times.)
 */
function settle(): void {
  execFileSync('sync');
}

function timedSync(work: () => unknown): number {
  const started = performance.now();
  work();
  return performance.now() - started;
}

/** A store made for one measurement, and how to end it (a loopback fake Files API, a folder). */
export interface BenchStore {
  store: SnapshotStore;
  close(): Promise<void>;
}

/**
 * The shutdown-time work through a given store: a full snapshot of the tree, the snapshot after
 * 10 files change (what SIGTERM must finish), and a restore into an empty folder by an engine
 * with an empty cache (a fresh container). `makeStore` gives a new, empty store each round.
 */
export async function throughStore(label: string, makeStore: () => Promise<BenchStore>, rounds: number) {
  const root = await fs.mkdtemp(join(tmpdir(), 'devbox-bench-persist-store-'));
  try {
    const tree = join(root, 'tree');
    const paths = await buildBenchTree(tree);
    const full: number[] = [];
    const shutdown: number[] = [];
    const restore: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const { store, close } = await makeStore();
      try {
        const engine = new SnapshotEngine({ store, cacheDir: join(root, `cache-${r}`) });
        full.push((await timed(() => engine.snapshot(sources(tree), 'bench'))).ms);
        await changeTen(tree, paths, r);
        shutdown.push((await timed(() => engine.snapshot(sources(tree), 'shutdown'))).ms);
        const fresh = new SnapshotEngine({ store, cacheDir: join(root, `cache-fresh-${r}`) });
        const target = join(root, `restored-${r}`);
        restore.push((await timed(() => fresh.restore('bench', { roots: [{ id: 'workspace', dir: target }] }))).ms);
        await fs.rm(target, { recursive: true, force: true });
        engine.close();
        fresh.close();
      } finally {
        await close();
      }
    }
    return {
      store: label, rounds,
      full_snapshot_median_ms: round(median(full)),
      shutdown_snapshot_after_10_changes_median_ms: round(median(shutdown)),
      restore_median_ms: round(median(restore)),
    };
  } finally {
    await fs.rm(root, { recursive: true, force: true });
  }
}

/** The loopback fake of the Files API (test/platform), answering after `delayMs`, through the real SDK and VolumeStore. */
export async function fakeFilesApi(delayMs: number): Promise<BenchStore> {
  const { startFakeWorkspace } = await import('../test/platform/fake-workspace.ts');
  const { createVolumeStore } = await import('../src/persistence/volume-store.ts');
  const workspace = await startFakeWorkspace();
  workspace.addVolume('/Volumes/main/bench/devbox');
  workspace.filesFaults({ delayMs });
  const store = await createVolumeStore({
    target: { kind: 'volume', path: '/Volumes/main/bench/devbox/persist' },
    platform: { host: workspace.url, clientId: workspace.clientId, clientSecret: workspace.clientSecret },
  });
  return { store, close: () => workspace.close() };
}
