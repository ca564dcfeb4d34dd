// A worker thread of work-pool.ts: reads and hashes batches of files for snapshots
// (read-batch.ts), checks and writes batches of files for restores (write-batch.ts), and
// answers with the bytes it read handed back by transfer. A task that fails answers its error
// (message and errno code); the worker goes on. It says when it is ready to take tasks.
import { parentPort } from 'node:worker_threads';
import { readBatch } from './read-batch.ts';
import type { PoolTask } from './work-pool.ts';
import { writeBatch } from './write-batch.ts';

const port = parentPort!;

port.on('message', async ({ id, task }: { id: number; task: PoolTask }) => {
  try {
    if (task.kind === 'read') {
      const files = task.files.map((file) => (typeof file.abs === 'string' ? file : { ...file, abs: Buffer.from(file.abs.buffer, file.abs.byteOffset, file.abs.byteLength) }));
      const value = await readBatch(files, task.attempts, {}, task.maxBytes);
      port.postMessage({ id, value }, value.buffers);
    } else {
      port.postMessage({ id, value: await writeBatch(task.bytes, task.entries, task.algorithm) });
    }
  } catch (error) {
    port.postMessage({ id, error: { message: (error as Error).message, code: (error as NodeJS.ErrnoException).code } });
  }
});

// Every module is loaded: the pool may count on this worker now.
port.postMessage({ ready: true });
