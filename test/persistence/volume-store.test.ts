// The Unity Catalog volume target through the real Databricks SDK, against the fake workspace's
// Files API on loopback: objects kept whole under nested keys, listings that page, refusals and a
// missing volume told apart from failures worth retrying, dropped uploads retried, slow answers and
// aborts, no secret in any message; and a workspace snapshotted there and restored by the engine.
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkspaceClient } from '@databricks/sdk-experimental';
import { afterEach, describe, expect, it } from 'vitest';
import { SnapshotEngine } from '../../src/persistence/engine.ts';
import { StoreError } from '../../src/persistence/types.ts';
import { parsePersistTarget } from '../../src/config/persist-target.ts';
import { createVolumeStore, VolumeStore, type RetryOptions } from '../../src/persistence/volume-store.ts';
import { eventually } from '../helpers/wait.ts';
import { startFakeWorkspace, type FakeWorkspace } from '../platform/fake-workspace.ts';
import { fakeWorkspaceSettings } from '../platform/platform-settings.ts';
import { content, describeTree, sourcesFor, useTempDirs, workspaceRoot, writeFiles } from './fixtures.ts';

const VOLUME = '/Volumes/main/team/devbox';
const ROOT = `${VOLUME}/prod`;
const TARGET = { kind: 'volume', path: ROOT } as const;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface SetUp {
  workspace: FakeWorkspace;
  store: VolumeStore;
  logs: string[];
  /** The backoff waits the store asked for (taken at once: tests never sleep). */
  waits: number[];
}

async function setUp(options: { volume?: boolean; retry?: RetryOptions; requestTimeoutMs?: number } = {}): Promise<SetUp> {
  const workspace = await startFakeWorkspace();
  cleanups.push(() => workspace.close());
  if (options.volume !== false) workspace.addVolume(VOLUME);
  const logs: string[] = [];
  const waits: number[] = [];
  const store = await createVolumeStore({
    target: TARGET,
    platform: fakeWorkspaceSettings(workspace, tmpdir()),
    log: (line) => logs.push(line),
    retry: { delay: async (ms) => { waits.push(ms); }, ...options.retry },
    requestTimeoutMs: options.requestTimeoutMs,
  });
  return { workspace, store, logs, waits };
}

/** The StoreError a promise rejects with. */
async function failureOf(promise: Promise<unknown>): Promise<StoreError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(StoreError);
  return error as StoreError;
}

describe('objects in a volume', () => {
  it('keeps objects whole under nested keys: put, get, list and delete', async () => {
    const { workspace, store } = await setUp();
    expect(store.description).toBe(`volume ${ROOT}`);
    const objects = new Map<string, Buffer>([
      ['servers/hello/manifest.yaml', Buffer.from('apiVersion: devbox.dev/v1alpha1\nkind: EditorServer\n')],
      ['servers/hello/snapshots/2026-11-26T10-00-00.000Z-1a2b.json', Buffer.from('{"files":2}')],
      ['servers/other/deleted.json', Buffer.from('{}')],
      ['objects/2026-11-26T10-00-00.000Z-ab12-100000', randomBytes(100_000)],
      ['objects/empty', Buffer.alloc(0)],
    ]);
    for (const [key, body] of objects) await store.put(key, body);

    for (const [key, body] of objects) {
      expect((await store.get(key))?.equals(body), key).toBe(true);
      expect(workspace.volumeFile(`${ROOT}/${key}`)?.equals(body), key).toBe(true);
    }
    expect((await store.list('')).sort()).toEqual([...objects.keys()].sort());
    expect((await store.list('servers/hello/')).sort()).toEqual(['servers/hello/manifest.yaml', 'servers/hello/snapshots/2026-11-26T10-00-00.000Z-1a2b.json']);
    expect(await store.list('objects/2026')).toEqual(['objects/2026-11-26T10-00-00.000Z-ab12-100000']);
    expect(await store.list('servers/nobody/')).toEqual([]);
    expect(await store.get('servers/nobody/manifest.yaml')).toBeUndefined();

    await store.put('servers/hello/manifest.yaml', Buffer.from('replaced'));
    expect((await store.get('servers/hello/manifest.yaml'))?.toString()).toBe('replaced');

    await store.delete('servers/hello/manifest.yaml');
    await store.delete('servers/hello/manifest.yaml');
    expect(await store.get('servers/hello/manifest.yaml')).toBeUndefined();
    expect(await store.list('servers/hello/')).toEqual(['servers/hello/snapshots/2026-11-26T10-00-00.000Z-1a2b.json']);
  });

  it('lists a folder of a fresh target as empty and finds nothing in it', async () => {
    const { store } = await setUp();
    expect(await store.list('servers/')).toEqual([]);
    expect(await store.list('')).toEqual([]);
    expect(await store.get('servers/hello/deleted.json')).toBeUndefined();
  });

  it('follows every page token of a listing that pages, on a client the caller made', async () => {
    const workspace = await startFakeWorkspace();
    cleanups.push(() => workspace.close());
    workspace.addVolume(VOLUME);
    const client = new WorkspaceClient({ host: workspace.url, clientId: workspace.clientId, clientSecret: workspace.clientSecret, authType: 'oauth-m2m', loaders: [] });
    const store = new VolumeStore({ client, target: TARGET });
    const keys = Array.from({ length: 7 }, (_, i) => `servers/hello/snapshots/2026-11-26T10-00-0${i}.000Z-1a2b.json`);
    for (const key of keys) await store.put(key, Buffer.from(key));

    workspace.filesFaults({ pageSize: 2 });
    workspace.resetFilesStats();
    expect((await store.list('servers/hello/')).sort()).toEqual(keys);
    // servers/hello (one folder: one page), then its snapshots folder: 7 entries, 2 a page.
    expect(workspace.filesStats.listPages).toBe(1 + 4);
  });

  it('walks many folders a few at a time', async () => {
    const { workspace, store } = await setUp();
    const keys = Array.from({ length: 12 }, (_, i) => `servers/s${i}/snapshots/x.json`);
    await Promise.all(keys.map((key) => store.put(key, Buffer.from('x'))));
    workspace.filesFaults({ delayMs: 20 });
    workspace.resetFilesStats();
    expect((await store.list('servers/')).sort()).toEqual(keys.sort());
    expect(workspace.filesStats.maxInFlight).toBeGreaterThan(1);
    expect(workspace.filesStats.maxInFlight).toBeLessThanOrEqual(4);
  });
});

describe('failures', () => {
  it('takes a refusal as final: 403 is denied, with what to do, and not retried', async () => {
    const { workspace, store, waits } = await setUp();
    workspace.filesFaults({ deny: true });
    const failure = await failureOf(store.put('servers/hello/manifest.yaml', Buffer.from('x')));
    expect(failure.failure).toBe('denied');
    expect(failure.message).toContain('PERMISSION_DENIED');
    expect(failure.hint).toBe("add the volume to the app as a resource with Can read and write (the app's service principal needs READ VOLUME and WRITE VOLUME)");
    expect(workspace.filesStats.requests.PUT).toBe(1);
    expect((await failureOf(store.get('servers/hello/manifest.yaml'))).failure).toBe('denied');
    expect((await failureOf(store.list('servers/'))).failure).toBe('denied');
    expect(workspace.filesStats.requests.GET).toBe(2);
    expect(waits).toEqual([]);
  });

  it('retries a 500 and succeeds', async () => {
    const { workspace, store, logs, waits } = await setUp();
    workspace.filesFaults({ failNext: { status: 500, count: 1 } });
    await store.put('servers/hello/manifest.yaml', Buffer.from('kept'));
    expect(workspace.volumeFile(`${ROOT}/servers/hello/manifest.yaml`)?.toString()).toBe('kept');
    expect(workspace.filesStats.requests.PUT).toBe(2);
    expect(waits).toHaveLength(1);
    expect(logs).toEqual([expect.stringMatching(/uploading servers\/hello\/manifest\.yaml failed: HTTP 500 INTERNAL_ERROR.*trying again in \d\.\d s \(2 of 5\)/)]);
  });

  it('gives up on a workspace that keeps failing after a bounded number of tries, waiting longer each time', async () => {
    const { workspace, store, waits } = await setUp({ retry: { attempts: 4, initialMs: 100, maxMs: 1000 } });
    workspace.filesFaults({ failNext: { status: 503, count: 100 } });
    const failure = await failureOf(store.get('servers/hello/manifest.yaml'));
    expect(failure.failure).toBe('transient');
    expect(failure.message).toContain('HTTP 503 TEMPORARILY_UNAVAILABLE');
    expect(workspace.filesStats.requests.GET).toBe(4);
    expect(waits).toHaveLength(3);
    // Doubling, with jitter: each wait lies between half and all of 100, 200, 400 ms.
    waits.forEach((wait, i) => {
      expect(wait).toBeGreaterThanOrEqual(50 * 2 ** i);
      expect(wait).toBeLessThanOrEqual(100 * 2 ** i);
    });
  });

  it('retries an upload whose connection dropped in the middle, and the object is whole afterwards', async () => {
    const { workspace, store } = await setUp();
    const key = 'objects/2026-11-26T10-00-00.000Z-ab12-4000000';
    const before = randomBytes(2_000_000);
    const after = randomBytes(4_000_000);
    await store.put(key, before);

    workspace.filesFaults({ dropNext: 1 });
    workspace.resetFilesStats();
    await store.put(key, after);
    expect(workspace.filesStats.requests.PUT).toBe(2);
    // The first try sent part of the body before the connection broke.
    expect(workspace.filesStats.bytesIn).toBeGreaterThan(after.length);
    expect(workspace.volumeFile(`${ROOT}/${key}`)?.equals(after)).toBe(true);
    expect((await store.get(key))?.equals(after)).toBe(true);
  });

  it('leaves the previous object whole when an upload is cut off for good', async () => {
    const { workspace, store } = await setUp({ retry: { attempts: 1 } });
    const key = 'servers/hello/snapshots/a.json';
    const before = randomBytes(1_000_000);
    await store.put(key, before);
    workspace.filesFaults({ dropNext: 1 });
    const failure = await failureOf(store.put(key, randomBytes(3_000_000)));
    expect(failure.failure).toBe('unreachable');
    expect((await store.get(key))?.equals(before)).toBe(true);
  });

  it('says a volume that does not exist is missing, naming it, without retrying', async () => {
    const { workspace, store, waits } = await setUp({ volume: false });
    const put = await failureOf(store.put('servers/hello/manifest.yaml', Buffer.from('x')));
    expect(put.failure).toBe('missing');
    expect(put.hint).toContain(VOLUME);
    expect(put.hint).toContain('main.team.devbox');
    expect(workspace.filesStats.requests.PUT).toBe(1);
    expect((await failureOf(store.get('servers/hello/manifest.yaml'))).failure).toBe('missing');
    expect((await failureOf(store.list('servers/'))).failure).toBe('missing');
    expect(waits).toEqual([]);
  });

  it('says a workspace that cannot be reached is unreachable', async () => {
    const { workspace, store } = await setUp({ retry: { attempts: 2 } });
    await store.put('a', Buffer.from('x'));
    workspace.setReachable(false);
    const failure = await failureOf(store.get('a'));
    expect(failure.failure).toBe('unreachable');
    expect(failure.hint).toContain('DATABRICKS_HOST');

    const closed = await startFakeWorkspace();
    await closed.close();
    const nowhere = await createVolumeStore({ target: TARGET, platform: { host: closed.url, clientId: 'id', clientSecret: 'secret' }, retry: { attempts: 1 } });
    expect((await failureOf(nowhere.put('a', Buffer.from('x')))).failure).toBe('unreachable');
  });

  it('refuses credentials the workspace does not accept as denied, saying which to check', async () => {
    const workspace = await startFakeWorkspace();
    cleanups.push(() => workspace.close());
    workspace.addVolume(VOLUME);
    const wrongSecret = `wrong-${randomBytes(12).toString('hex')}`;
    const store = await createVolumeStore({ target: TARGET, platform: { host: workspace.url, clientId: workspace.clientId, clientSecret: wrongSecret }, retry: { attempts: 1 } });
    const failure = await failureOf(store.put('a', Buffer.from('x')));
    expect(failure.failure).toBe('denied');
    expect(failure.hint).toContain('DATABRICKS_CLIENT_SECRET');
    expect(`${failure.message} ${failure.hint}`).not.toContain(wrongSecret);
  });
});

describe('time', () => {
  it('still works when every answer is slow', async () => {
    const { workspace, store } = await setUp();
    workspace.filesFaults({ delayMs: 150 });
    await store.put('servers/hello/manifest.yaml', Buffer.from('slow'));
    expect((await store.get('servers/hello/manifest.yaml'))?.toString()).toBe('slow');
    expect(await store.list('servers/')).toEqual(['servers/hello/manifest.yaml']);
  });

  it('ends a request at once when its signal aborts, without retrying it', async () => {
    const { workspace, store, waits } = await setUp();
    await store.put('a', Buffer.from('x'));
    workspace.filesFaults({ delayMs: 20_000 });
    workspace.resetFilesStats();
    const abort = new AbortController();
    const started = performance.now();
    const get = store.get('a', abort.signal);
    await eventually(() => workspace.filesStats.requests.GET === 1);
    abort.abort();
    await expect(get).rejects.toMatchObject({ name: 'AbortError' });
    expect(performance.now() - started).toBeLessThan(5000);
    expect(workspace.filesStats.requests.GET).toBe(1);
    expect(waits).toEqual([]);
    await expect(store.put('b', Buffer.from('x'), abort.signal)).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('bounds each request in time and counts one that exceeds it as transient', async () => {
    const { workspace, store } = await setUp({ requestTimeoutMs: 300, retry: { attempts: 2 } });
    await store.put('a', Buffer.from('x'));
    workspace.filesFaults({ delayMs: 20_000 });
    workspace.resetFilesStats();
    const failure = await failureOf(store.get('a'));
    expect(failure.failure).toBe('transient');
    expect(failure.message).toContain('no answer within 0.3 s');
    expect(workspace.filesStats.requests.GET).toBe(2);
  });
});

describe('secrets', () => {
  it('never lets a token or the client secret reach a message or a log line', async () => {
    const { workspace, store, logs } = await setUp();
    workspace.filesFaults({ echoCredentials: true, failNext: { status: 500, count: 1 } });
    await store.put('a', Buffer.from('x'));
    workspace.filesFaults({ echoCredentials: true, deny: true });
    const failure = await failureOf(store.put('a', Buffer.from('y')));

    const told = [failure.message, failure.hint, String(failure), JSON.stringify(failure), ...logs].join('\n');
    // The fake did repeat the header; the store masked it.
    expect(told).toContain('Authorization: Bearer ***');
    expect(workspace.accessTokens.length).toBeGreaterThan(0);
    for (const secret of [...workspace.accessTokens, workspace.clientSecret]) expect(told).not.toContain(secret);
  });
});

describe('the persistence target', () => {
  it.each([
    ['dbfs:/Volumes/main/team/devbox/prod', { kind: 'volume', path: '/Volumes/main/team/devbox/prod' }],
    ['dbfs:/Volumes/main/team/devbox', { kind: 'volume', path: '/Volumes/main/team/devbox' }],
    ['/Volumes/main/team/devbox/prod/eu/', { kind: 'volume', path: '/Volumes/main/team/devbox/prod/eu' }],
    ['  /Volumes/main/team/devbox//prod ', { kind: 'volume', path: '/Volumes/main/team/devbox/prod' }],
    ['/mnt/keep', { kind: 'folder', dir: '/mnt/keep' }],
    ['/mnt/keep/', { kind: 'folder', dir: '/mnt/keep' }],
  ])('reads %j', (text, expected) => {
    expect(parsePersistTarget(text)).toEqual(expected);
  });

  it.each([
    ['keep/snapshots', /is a relative path/],
    ['./keep', /is a relative path/],
    ['', /is empty/],
    ['dbfs:/tmp/keep', /DBFS path outside \/Volumes/],
    ['dbfs:/', /DBFS path outside \/Volumes/],
    ['dbfs:/Volumes', /names no catalog, schema, volume/],
    ['/Volumes/main', /names no schema, volume/],
    ['dbfs:/Volumes/main/team', /names no volume/],
    ['/Volumes/main/team/devbox/../other', /"\." or "\.\." segment/],
    ['/mnt/keep/../other', /"\." or "\.\." segment/],
    ['s3://bucket/keep', /scheme "s3:"/],
    ['abfss://container@account.dfs.core.windows.net/keep', /scheme "abfss:"/],
    ['/Volumes/main/team/devbox/a?b', /control character/],
  ])('refuses %j, saying which forms it accepts', (text, reason) => {
    let message = '';
    try {
      parsePersistTarget(text);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(reason);
    expect(message).toContain('dbfs:/Volumes/<catalog>/<schema>/<volume>/<prefix>');
    expect(message).toContain('absolute folder path');
  });

  it('asks for the service principal when a volume target has no credentials', async () => {
    await expect(createVolumeStore({ target: { kind: 'volume', path: '/Volumes/main/team/devbox' }, platform: { host: 'https://adb-1.azuredatabricks.net', clientId: undefined, clientSecret: undefined } }))
      .rejects.toThrow(/DATABRICKS_CLIENT_ID, DATABRICKS_CLIENT_SECRET are not set/);
  });
});

describe('the snapshot engine on a volume', () => {
  const tempDir = useTempDirs();

  it('snapshots a workspace to the volume and restores it byte-identical into an empty folder', async () => {
    const { workspace, store } = await setUp();
    const folder = await tempDir();
    const small: Record<string, Buffer> = {};
    for (let i = 0; i < 60; i++) small[`src/dir${i % 5}/file-${i}.txt`] = content(`small ${i}`, (i * 53) % 3000);
    await writeFiles(folder, { ...small, 'empty.txt': '', 'data/medium.bin': content('medium', 300_000), 'README.md': '# hello\n' });
    await fs.symlink('src/dir1', join(folder, 'link-to-dir1'));
    const before = await describeTree(folder);
    const sources = sourcesFor('hello', folder);
    const engine = (cacheDir: string) => new SnapshotEngine({ store, cacheDir, retryDelaysMs: [], smallFileBytes: 64 * 1024, packBytes: 128 * 1024 });

    // A failing answer and short listing pages on the way: the store absorbs both.
    workspace.filesFaults({ failNext: { status: 503, count: 2 }, pageSize: 2 });
    const { snapshot } = await engine(join(await tempDir(), 'cache')).snapshot(sources, 'api');
    expect(snapshot.files).toBe(64); // 63 files and a link
    expect(workspace.volumeFilePaths().every((path) => path.startsWith(`${ROOT}/`))).toBe(true);

    const target = join(await tempDir(), 'restored');
    const restored = await engine(join(await tempDir(), 'fresh-cache')).restore('hello', { roots: workspaceRoot(target) });
    expect(await describeTree(target)).toEqual(before);
    expect(restored).toMatchObject({ manifestText: sources.manifestText, files: 64, corrupted: [] });
    expect(restored.snapshot.id).toBe(snapshot.id);
  });
});
