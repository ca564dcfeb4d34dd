// An editor in a server's own image (devcontainer.json's `image`, StartSpec.image), its variables
// (StartSpec.env) and its volume's least size (StartSpec.storageBytes), over the in-memory
// cluster; the script that copies code-server into the volume, run here in a folder standing for
// the editor image. On the test cluster: test/kubernetes/devcontainer-on-cluster.test.ts.
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import type { RuntimeEvent } from '../../../src/runtime/interface.ts';
import { bytesQuantity } from '../../../src/runtime/kubernetes/claim-size.ts';
import { codeServerSource, copyKey, editorCommandOf, PROVIDE_SCRIPT, provideReport } from '../../../src/runtime/kubernetes/foreign-image.ts';
import { Names } from '../../../src/runtime/kubernetes/names.ts';
import { ServerObjects } from '../../../src/runtime/kubernetes/objects.ts';
import { KubernetesWorkload } from '../../../src/runtime/kubernetes/runtime.ts';
import { FakeCluster, fakeRuntimeOptions } from '../../helpers/fake-cluster.ts';
import { eventually } from '../../helpers/wait.ts';

const run = promisify(execFile);
const owner = { name: 'devbox-alpha', uid: 'anchor-uid' };
const names = new Names('devbox-', 'team');

let runtime: KubernetesWorkload<FakeCluster> | undefined;
afterEach(() => runtime?.dispose());

describe("an editor in the server's own image", () => {
  it('runs that image with code-server copied into the volume by an init container of the editor image', () => {
    const options = fakeRuntimeOptions();
    const set = new ServerObjects(names, options).statefulSet('alpha', owner, 1, 8010, undefined, undefined, { image: 'example/toolchain:2' }) as any;
    const pod = set.spec.template.spec;
    expect(pod.initContainers.map((c: any) => [c.name, c.image])).toEqual([['prepare', 'example/code-server:1'], ['provide-code-server', 'example/code-server:1']]);
    const key = copyKey('example/code-server:1', 'code-server');
    expect(pod.initContainers[1].command.slice(3)).toEqual(['provide', 'code-server', key]);
    expect(pod.initContainers[1].volumeMounts[0]).toEqual({ name: 'data', mountPath: '/data' });
    expect(pod.initContainers[0].command[2], 'the copy is kept while a start needs it').not.toContain('rm -rf /data/editor/code-server');
    const [editor] = pod.containers;
    expect(editor.image).toBe('example/toolchain:2');
    expect(editor.command.slice(3)).toEqual(['code-server', `/data/editor/code-server/${key}/devbox-launcher`]);
    expect(editorCommandOf({ spec: pod }), "the extension CLI runs the copy's launcher in that Pod").toEqual([`/data/editor/code-server/${key}/devbox-launcher`]);
  });

  it('runs the configured command from the mounts when they hold code-server (as on the test cluster), with no copy', () => {
    const options = { ...fakeRuntimeOptions(), command: ['sh', '/cache/code-server-4/bin/code-server'], extraMounts: [{ name: 'cache', mountPath: '/cache', hostPath: { path: '/cache' } }] };
    expect(codeServerSource(options)).toBe('mounts');
    expect(codeServerSource({ ...options, codeServerFrom: 'copy' })).toBe('copy');
    expect(codeServerSource({ ...options, extraMounts: [] })).toBe('copy');
    const pod = (new ServerObjects(names, options).statefulSet('alpha', owner, 1, 8010, undefined, undefined, { image: 'example/toolchain:2' }) as any).spec.template.spec;
    expect(pod.initContainers.map((c: any) => c.name)).toEqual(['prepare']);
    expect(pod.initContainers[0].command[2].split('\n')[0], 'a copy an earlier start left goes').toBe('rm -rf /data/editor/code-server');
    expect(pod.containers[0].image).toBe('example/toolchain:2');
    expect(pod.containers[0].command.slice(3)).toEqual(['code-server', 'sh', '/cache/code-server-4/bin/code-server']);
    expect(pod.containers[0].volumeMounts.map((m: any) => m.mountPath)).toContain('/cache');
  });

  it('changes nothing when no image, or the editor image itself, is asked for', () => {
    const objects = new ServerObjects(names, fakeRuntimeOptions());
    const plain = objects.statefulSet('alpha', owner, 1, 8010, undefined);
    expect(objects.statefulSet('alpha', owner, 1, 8010, undefined, undefined, { image: 'example/code-server:1' })).toEqual(plain);
    expect(objects.statefulSet('alpha', owner, 1, 8010, undefined, undefined, {})).toEqual(plain);
  });

  it("gives the editor's container the server's variables under the fixed ones and the config's, `$(` kept as written", () => {
    const options = { ...fakeRuntimeOptions(), env: { TZ: 'UTC' } };
    const set = new ServerObjects(names, options).statefulSet('alpha', owner, 1, 8010, undefined, undefined, {
      env: { PROJECT: 'demo', HOME: '/root', TZ: 'Europe/Paris', SHOW: 'costs $(date) $$ $HOME' },
    }) as any;
    const env = Object.fromEntries(set.spec.template.spec.containers[0].env.map((e: any) => [e.name, e.value]));
    expect(env).toEqual({
      PROJECT: 'demo', SHOW: 'costs $$(date) $$ $HOME', TZ: 'UTC',
      HOME: '/data/editor/home', XDG_CONFIG_HOME: '/data/editor/home/.config', XDG_DATA_HOME: '/data/editor/home/.local/share',
    });
    // The init containers keep the runtime's own only.
    expect(set.spec.template.spec.initContainers[0].env.map((e: any) => e.name)).not.toContain('PROJECT');
  });
});

describe("the copy of code-server into the server's volume", () => {
  it('copies the install folder once, runs from the copy, copies nothing the next time, and replaces the copy of another image', async () => {
    const root = await fs.mkdtemp(join(tmpdir(), 'devbox-provide-'));
    try {
      // The editor image: code-server's install folder, its launcher linked onto the PATH.
      const install = join(root, 'image', 'usr', 'lib', 'code-server');
      await fs.mkdir(join(install, 'bin'), { recursive: true });
      await fs.mkdir(join(install, 'lib'), { recursive: true });
      await fs.writeFile(join(install, 'lib', 'payload'), Buffer.alloc(300 * 1024, 7));
      await fs.writeFile(join(install, 'bin', 'code-server'), '#!/bin/sh\nhere=$(dirname "$(readlink -f "$0")")\necho "code-server from $(dirname "$here") with $*"\n', { mode: 0o755 });
      await fs.mkdir(join(root, 'image', 'usr', 'bin'), { recursive: true });
      await fs.symlink(join(install, 'bin', 'code-server'), join(root, 'image', 'usr', 'bin', 'code-server'));
      const copies = join(root, 'volume', 'code-server');
      const report = join(root, 'report');
      const provide = (key: string) => run('sh', ['-c', PROVIDE_SCRIPT, 'provide', 'code-server', key], {
        env: { PATH: `${join(root, 'image', 'usr', 'bin')}:/usr/bin:/bin`, DEVBOX_COPIES_DIR: copies, DEVBOX_REPORT: report },
      });
      const said = async () => provideReport({ status: { initContainerStatuses: [{ name: 'provide-code-server', state: { terminated: { exitCode: 0, message: await fs.readFile(report, 'utf8') } } }] } } as any);

      await provide('k1');
      expect(await said()).toMatchObject({ copiedKiB: expect.any(Number), seconds: expect.any(Number) });
      expect((await said() as { copiedKiB: number }).copiedKiB).toBeGreaterThanOrEqual(300);
      const { stdout } = await run(join(copies, 'k1', 'devbox-launcher'), ['--version']);
      expect(stdout.trim()).toBe(`code-server from ${join(copies, 'k1')} with --version`);

      // The next start: the copy is there and whole.
      const before = (await fs.stat(join(copies, 'k1', 'lib', 'payload'))).mtimeMs;
      await provide('k1');
      expect(await said()).toEqual({ kept: true });
      expect((await fs.stat(join(copies, 'k1', 'lib', 'payload'))).mtimeMs).toBe(before);

      // A copy cut short is never taken for whole; another image's copy replaces the old one.
      await fs.mkdir(join(copies, '.partial-123'));
      await provide('k2');
      expect((await fs.readdir(copies)).sort()).toEqual(['k2']);
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  });

  it('says what to set when the editor image has no code-server', async () => {
    const failed = await run('sh', ['-c', PROVIDE_SCRIPT, 'provide', 'code-server-nowhere', 'k1'], { env: { PATH: '/usr/bin:/bin', DEVBOX_COPIES_DIR: join(tmpdir(), 'devbox-never'), DEVBOX_REPORT: '/dev/null' } }).catch((error) => error);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('set runtime.kubernetes.command');
  });
});

describe("a start's image, variables and volume size on the cluster", () => {
  it("makes the Pod from them, and keeps them for a scale to zero", async () => {
    const cluster = new FakeCluster();
    runtime = new KubernetesWorkload(fakeRuntimeOptions(), cluster);
    await runtime.synced();
    const starting = runtime.start({ name: 'alpha', port: 8123, image: 'example/toolchain:2', env: { PROJECT: 'demo' }, resources: { requests: { cpu: '250m', memory: '256Mi' } } });
    const pod = await eventually(() => cluster.pod('devbox-alpha-0'));
    cluster.schedule(pod.metadata!.name!);
    cluster.runEditor(pod.metadata!.name!);
    const started = await starting;
    const editor = pod.spec!.containers[0];
    expect(editor.image).toBe('example/toolchain:2');
    expect(editor.env).toContainEqual({ name: 'PROJECT', value: 'demo' });
    expect(editor.resources).toEqual({ requests: { cpu: '250m', memory: '256Mi' }, limits: { memory: '2Gi' } });
    await runtime.stop('alpha', started.ref, 1000);
    const set = cluster.object<any>('StatefulSet', 'devbox-alpha');
    expect(set.spec.replicas).toBe(0);
    expect(set.spec.template.spec.containers[0].image).toBe('example/toolchain:2');
  });

  it('makes a new volume at least storageBytes, never asks an existing one for less, and grows it only where its class can', async () => {
    const cluster = new FakeCluster();
    const events: RuntimeEvent[] = [];
    runtime = new KubernetesWorkload(fakeRuntimeOptions(), cluster);
    runtime.onEvent((_name, event) => events.push(event));
    await runtime.synced();
    const size = () => cluster.object<any>('PersistentVolumeClaim', 'devbox-alpha').spec.resources.requests.storage;

    await runtime.storage.readyForEditor('alpha', 8 * 2 ** 30);
    expect(size(), 'more than the configured 5Gi').toBe('8Gi');
    await runtime.storage.readyForEditor('alpha');
    expect(size(), 'an apply never lowers it').toBe('8Gi');
    expect(await runtime.storage.readyForEditor('alpha', 20 * 2 ** 30)).toEqual({ short: expect.stringContaining('cannot be expanded') });
    expect(size()).toBe('8Gi');

    // A start says so among the server's events.
    const starting = runtime.start({ name: 'alpha', port: 8123, storageBytes: 20 * 2 ** 30 });
    cluster.runEditor((await eventually(() => cluster.pod('devbox-alpha-0'))).metadata!.name!);
    await starting;
    expect(events).toContainEqual({ level: 'WARN', reason: 'VolumeTooSmall', message: expect.stringContaining('asks for 20Gi') });

    // A class that allows expansion: the request grows.
    await cluster.apply({ apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'grows' }, allowVolumeExpansion: true } as any);
    await cluster.apply({ ...cluster.object<any>('PersistentVolumeClaim', 'devbox-alpha'), spec: { ...cluster.object<any>('PersistentVolumeClaim', 'devbox-alpha').spec, storageClassName: 'grows' } });
    expect(await runtime.storage.readyForEditor('alpha', 20 * 2 ** 30)).toEqual({});
    expect(size()).toBe('20Gi');
    expect(bytesQuantity(256 * 2 ** 20 + 1)).toBe('257Mi');
  });
});
