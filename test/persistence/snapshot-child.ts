// A process that snapshots a workspace into a FolderStore and stops dead after a number of puts,
// for the crash tests: it prints "paused" once it holds a put back, and waits to be killed.
// Usage: node snapshot-child.ts <store dir> <cache dir> <workspace> <puts before pausing>
import { SnapshotEngine } from '../../src/persistence/engine.ts';
import { FolderStore } from '../../src/persistence/folder-store.ts';
import type { SnapshotStore } from '../../src/persistence/types.ts';

const [storeDir, cacheDir, workspace, pauseAfter] = process.argv.slice(2);
const folder = new FolderStore(storeDir);
let puts = 0;
const store: SnapshotStore = {
  description: folder.description,
  async put(key, body, signal) {
    if (++puts > Number(pauseAfter)) {
      process.stdout.write('paused\n');
      await new Promise(() => setInterval(() => undefined, 60_000)); // held until killed
    }
    return folder.put(key, body, signal);
  },
  get: (key, signal) => folder.get(key, signal),
  list: (prefix, signal) => folder.list(prefix, signal),
  delete: (key, signal) => folder.delete(key, signal),
};
const engine = new SnapshotEngine({ store, cacheDir, concurrency: 1, packBytes: 64 * 1024 });
await engine.snapshot({
  name: 'hello', uid: 'uid-hello', manifestText: 'second\n', status: {}, extensions: [], exclude: [],
  roots: [{ id: 'workspace', dir: workspace }],
}, 'shutdown');
process.stdout.write('done\n');
