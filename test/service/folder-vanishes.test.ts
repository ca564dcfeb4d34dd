// A manifest (or the whole manifests folder) that disappears for a while is not a request to
// delete anything: workspaces stay, and editors keep running while the folder is away.
import { existsSync, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Reconciled } from '../../src/index/server-index.ts';
import { eventually, processExists, startTestService, type TestService } from '../helpers/service.ts';
import { nextCall } from '../helpers/wait.ts';

/** Short enough that a folder away for longer than this would have had its editors stopped. */
const GRACE_SECONDS = 2;

let service: TestService;

beforeAll(async () => {
  service = await startTestService({ config: { controller: { resyncSeconds: 1, orphanGraceSeconds: GRACE_SECONDS } } });
});
afterAll(async () => {
  await service?.stop();
});

const file = (name: string) => join(service.settings.manifestsDir, `${name}.yaml`);
const byManifest = async (name: string) =>
  (await service.request('GET', '/servers')).body.find((s: { manifest: string }) => s.manifest === name);

/** A running server whose workspace holds a file of the user's. */
async function runningWithWork(name: string) {
  const created = (await service.request('POST', '/servers', { name })).body;
  const { pid } = (await service.request('POST', `/servers/${created.id}/start`)).body.data;
  const work = join(created.workspace_path, 'notes.txt');
  await fs.writeFile(work, `work of ${name}`);
  const { manifest } = (await service.request('GET', `/servers/${created.id}`)).body;
  return { id: created.id as string, manifest: manifest as string, port: created.port as number, pid: pid as number, work, workspace: created.workspace_path as string };
}

/**
 * The next reconcile of the server to finish that began at `at` (ms since the epoch) or later:
 * when it began and when it ended (the controller's 'reconciled' event says how long it took).
 */
async function reconciledFrom(name: string, at: number, timeoutMs = 20_000): Promise<{ began: number; ended: number }> {
  let ended = 0;
  const [{ seconds }] = await nextCall(
    (listener: (done: Reconciled) => void) => service.index.on('reconciled', listener),
    ({ name: done, seconds: took }) => {
      ended = Date.now();
      return done === name && ended - took * 1000 >= at;
    },
    timeoutMs,
  );
  return { began: ended - seconds * 1000, ended };
}

/**
 * Resolves once the controller has looked at the server past the point where a file gone from
 * its folder would have had its editor stopped: a reconcile that began at `from` or later (one
 * that saw it gone, and would have started the grace period by its end), then one that began a
 * grace period after that one ended.
 */
async function checkedPastGrace(name: string, from: number): Promise<void> {
  const first = await reconciledFrom(name, from);
  await reconciledFrom(name, first.ended + GRACE_SECONDS * 1000);
}

describe('the manifests folder moved away and back', () => {
  it('stops no editor and deletes no file; the controller resumes when it is back', async () => {
    const servers = [await runningWithWork('left'), await runningWithWork('right')];
    const dir = service.settings.manifestsDir;
    const away = `${dir}.away`;

    await fs.rename(dir, away);
    const awayAt = Date.now();
    // Away for longer than the grace period of a single missing file, over several resyncs (every
    // second): once the controller has looked at each server a grace period after it first saw
    // it gone, nothing may have been stopped or deleted.
    await Promise.all(servers.map((s) => checkedPastGrace(s.manifest, awayAt)));
    for (const s of servers) {
      expect(processExists(s.pid), `editor ${s.pid}`).toBe(true);
      expect(await fs.readFile(s.work, 'utf8')).toMatch(/^work of /);
    }
    // A request to change a paused server says why it cannot, and changes nothing.
    const stop = await service.request('POST', `/servers/${servers[0].id}/stop`);
    expect(stop.status).toBe(503);
    expect(stop.body.error.code).toBe('MANIFESTS_FOLDER_MISSING');
    expect((await service.request('DELETE', `/servers/${servers[1].id}`)).status).toBe(503);
    expect(processExists(servers[0].pid)).toBe(true);
    expect(await fs.readFile(servers[1].work, 'utf8')).toBe('work of right');
    // Said once, not once per server or per resync.
    expect(service.lines.filter((l) => l.includes(`manifests folder ${dir} is missing`))).toHaveLength(1);
    await fs.rename(away, dir);
    await eventually(() => service.lines.some((l) => l.includes(`manifests folder ${dir} is back`)), 10_000);

    for (const s of servers) {
      const record = (await service.request('GET', `/servers/${s.id}`)).body;
      expect(record).toMatchObject({ status: 'running', pid: s.pid, port: s.port });
      expect(processExists(s.pid)).toBe(true);
      expect(await fs.readFile(s.work, 'utf8')).toMatch(/^work of /);
    }
    // Watching again: a hand edit in the returned folder is acted on.
    const text = await fs.readFile(file('left'), 'utf8');
    await fs.writeFile(file('left'), text.replace('running: true', 'running: false'));
    await eventually(async () => (await service.request('GET', `/servers/${servers[0].id}`)).body.status === 'stopped');
    for (const s of servers) await service.request('DELETE', `/servers/${s.id}`);
  }, 60_000);
});

describe('a single manifest file that disappears', () => {
  it('and comes back within the grace period (a delete-then-write save): nothing happens at all', async () => {
    const s = await runningWithWork('saved');
    const text = await fs.readFile(file('saved'), 'utf8');
    await fs.rm(file('saved'));
    // Once the controller has looked: the file is reported missing (or, were it taken as a
    // deletion, the server is gone).
    await eventually(async () => {
      const entry = (await service.request('GET', '/manifests')).body.find((m: { name: string }) => m.name === 'saved');
      return entry === undefined || entry.warnings?.some((w: string) => /missing/.test(w));
    });
    // The grace period started by now at the latest: the controller counts it from its first look.
    const missingBy = Date.now();
    await fs.writeFile(file('saved'), text);
    await eventually(async () => (await service.request('GET', '/manifests')).body
      .some((m: { name: string; warnings?: string[] }) => m.name === 'saved' && !m.warnings?.some((w) => /missing/.test(w))));
    // Past the grace period (the controller looked again after it ended): still the same editor, uid and port.
    await reconciledFrom(s.manifest, missingBy + GRACE_SECONDS * 1000);
    const record = (await service.request('GET', `/servers/${s.id}`)).body;
    expect(record).toMatchObject({ status: 'running', pid: s.pid, port: s.port });
    expect(await fs.readFile(s.work, 'utf8')).toBe('work of saved');
    const logs: string[] = (await service.request('GET', `/servers/${s.id}/logs?lines=1000`)).body.data.logs;
    expect(logs.join('\n')).not.toMatch(/stopping|deleted/);
    await service.request('DELETE', `/servers/${s.id}`);
  }, 30_000);

  it('for longer than the grace period: its editor stops, its files stay, and it comes back with its uid', async () => {
    const s = await runningWithWork('dropped');
    const text = await fs.readFile(file('dropped'), 'utf8');
    await fs.rm(file('dropped'));
    await eventually(() => !processExists(s.pid), (GRACE_SECONDS + 8) * 1000);
    await eventually(async () => (await byManifest('dropped')) === undefined);
    expect(await fs.readFile(s.work, 'utf8')).toBe('work of dropped');
    expect(existsSync(s.workspace)).toBe(true);

    // The file comes back: the same server, with the same uid and workspace.
    await fs.writeFile(file('dropped'), text.replace(/^ {2}uid: .*\n/m, ''));
    const back = await eventually(async () => {
      const r = await byManifest('dropped');
      return r?.status === 'running' ? r : undefined;
    });
    expect(back.id).toBe(s.id);
    expect(back.workspace_path).toBe(s.workspace);
    expect(await fs.readFile(s.work, 'utf8')).toBe('work of dropped');
    // Only a deliberate delete removes the files.
    await service.request('DELETE', `/servers/${s.id}`);
    expect(existsSync(s.workspace)).toBe(false);
  }, 40_000);
});
