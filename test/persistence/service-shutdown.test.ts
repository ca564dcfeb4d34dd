// The service as the platform runs it, a real process: SIGTERM with a 2,000-file workspace not
// yet kept finishes the final snapshot within the platform's 15 s, and a fresh container gets it
// back, with a server declared a moment before and never started; kill -9 in the middle of a snapshot leaves the previous complete one current.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, killEditors, portRange, processExists, request } from '../helpers/service.ts';
import { hashTree, recordWhen, restoredWhen, sorted, spawnService, writeFiles, type ServiceProcess } from './service-fixtures.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Machine {
  root: string;
  keep: string;
  start(): Promise<ServiceProcess>;
  /** What a redeploy leaves: no editors, no manifests, no data. */
  wipe(): Promise<void>;
}

async function machine(): Promise<Machine> {
  const base = await fs.mkdtemp(join(tmpdir(), 'devbox-persist-proc-'));
  const root = join(base, 'machine');
  const keep = join(base, 'keep');
  await fs.mkdir(root);
  await fs.mkdir(keep);
  const { min, max } = portRange();
  const config = join(base, 'devbox.config.yaml');
  await fs.writeFile(config, `ports: { min: ${min}, max: ${max} }\neditor: { stopGraceSeconds: 2 }\n`);
  const processes: ServiceProcess[] = [];
  cleanups.push(async () => {
    for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all(processes.map((p) => p.exited));
    await killEditors(join(root, 'data'));
    await fs.rm(base, { recursive: true, force: true });
  });
  return {
    root, keep,
    async start() {
      const started = await spawnService(root, { DEVBOX_PERSIST_TO: keep, DEVBOX_CONFIG: config });
      processes.push(started);
      return started;
    },
    async wipe() {
      await killEditors(join(root, 'data'));
      await fs.rm(join(root, 'manifests'), { recursive: true, force: true });
      await fs.rm(join(root, 'data'), { recursive: true, force: true });
    },
  };
}

async function createRunning(url: string, name: string): Promise<{ id: string; workspace: string }> {
  const created = await request(url, 'POST', '/servers', { name });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  expect((await request(url, 'POST', `/servers/${created.body.id}/start`)).status).toBe(200);
  return { id: created.body.id, workspace: created.body.workspace_path };
}

/** The snapshots of a server committed in the folder target (one index each). */
async function committed(keep: string, name: string): Promise<string[]> {
  return (await fs.readdir(join(keep, 'servers', name, 'snapshots')).catch(() => [] as string[])).filter((f) => f.endsWith('.json')).sort();
}

describe('the service process and its target', () => {
  it('finishes the final snapshot of a 2,000-file workspace within 15 s of SIGTERM, and a fresh container gets it back', async () => {
    const m = await machine();
    const first = await m.start();
    const { id, workspace } = await createRunning(first.url, 'Big');
    // And one declared a moment before the SIGTERM, never started: it comes back too.
    const declared = await request(first.url, 'POST', '/servers', { name: 'Declared only' });
    expect(declared.status).toBe(201);
    await writeFiles(workspace, 2000, 2048, 'pending');
    const files = sorted(await hashTree(workspace));
    expect(files).toHaveLength(2000);

    const began = performance.now();
    first.child.kill('SIGTERM');
    const exit = await first.exited;
    const seconds = (performance.now() - began) / 1000;
    expect(exit, first.output()).toEqual({ code: 0, signal: null });
    expect(seconds, first.output()).toBeLessThan(15);
    expect(first.output()).toMatch(/SIGTERM: final snapshots of [12] servers? in [\d.]+ s: 1 saved/);
    // The empty workspace kept when the server was created, then the final one.
    expect(await committed(m.keep, 'big')).toHaveLength(2);

    await m.wipe();
    const second = await m.start();
    await restoredWhen(second.url, id, 'Running', 60_000);
    expect(sorted(await hashTree(workspace))).toEqual(files);
    const back = await restoredWhen(second.url, declared.body.id, 'Stopped', 60_000);
    expect(back).toMatchObject({ name: 'Declared only', port: declared.body.port, status: 'stopped' });
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
  }, 120_000);

  it('after kill -9 in the middle of a snapshot, restores the previous complete one', async () => {
    const m = await machine();
    const first = await m.start();
    const { id, workspace } = await createRunning(first.url, 'Crashy');
    await writeFiles(workspace, 50, 1024, 'kept');
    const kept = sorted(await hashTree(workspace));
    first.child.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);
    const complete = await committed(m.keep, 'crashy');
    expect(complete).toHaveLength(2);

    // The editor kept running; the next service adopts it. Much new work, then a crash while it is kept.
    const second = await m.start();
    await recordWhen(second.url, id, 'running');
    await writeFiles(join(workspace, 'new'), 2000, 32 * 1024, 'lost');
    const objects = async () => (await fs.readdir(join(m.keep, 'objects'), { recursive: true })).length;
    const before = await objects();
    second.child.kill('SIGTERM');
    // Killed once the snapshot has begun writing objects, before its index is committed.
    await eventually(async () => (await objects()) > before, 15_000, 5);
    second.child.kill('SIGKILL');
    expect((await second.exited).signal).toBe('SIGKILL');
    expect(processExists(second.child.pid!)).toBe(false);
    expect(await committed(m.keep, 'crashy')).toEqual(complete);

    await m.wipe();
    const third = await m.start();
    await restoredWhen(third.url, id, 'Running', 60_000);
    expect(sorted(await hashTree(workspace))).toEqual(kept);
    third.child.kill('SIGTERM');
    expect((await third.exited).code).toBe(0);
  }, 120_000);
});
