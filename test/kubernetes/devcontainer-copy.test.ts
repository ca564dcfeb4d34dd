// code-server copied into a server's volume for an editor in a foreign image (foreign-image.ts,
// codeServerFrom: copy), on the test cluster, with what the copy costs. The "editor image" is the
// busybox image with a self-contained code-server install mounted at /opt/editor-image (the real
// code-server from the host's cache, hard-linked into the layout of the published image's
// /usr/lib/code-server: bin/code-server that runs lib/node from its own folder); the editor runs
// in the toolchain image, which has no code-server, from the copy. A second start copies nothing;
// a start in the editor image itself removes the copy.
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RuntimeRef } from '../../src/runtime/interface.ts';
import { provideReport } from '../../src/runtime/kubernetes/foreign-image.ts';
import { KubernetesWorkload } from '../../src/runtime/kubernetes/runtime.ts';
import { getObject, NO_CLUSTER, testCluster } from '../helpers/cluster.ts';
import { realEditor, runtimeOptions, testNamespace } from '../helpers/kube-runtime.ts';
import { eventually } from '../helpers/wait.ts';

const cluster = await testCluster();
if (!cluster) console.log(NO_CLUSTER);
const editor = realEditor();
const NO_EDITOR = 'there is no code-server in the cache (npm install puts it there)';
const TOOLCHAIN = 'devbox.local/toolchain:1';

let install: string | undefined;
let namespace: { name: string; remove(): Promise<void> } | undefined;
let runtime: KubernetesWorkload | undefined;

beforeAll(async () => {
  if (!cluster || !editor) return;
  // <cache>/code-server-<v>/bin/code-server runs <cache>/node-<v>/…/bin/node on <cache>/code-server-<v>/node_modules/code-server.
  const launcher = execFileSync('sh', ['-c', `sed -n 's/^exec "\\([^"]*\\)" "\\([^"]*\\)".*/\\1 \\2/p' "${editor.command.at(-1)}"`]).toString().trim().split(' ');
  const [node, entry] = launcher;
  const modules = entry.slice(0, entry.indexOf('/node_modules/code-server/') + '/node_modules'.length);
  install = await fs.mkdtemp(join(tmpdir(), 'devbox-editor-image-'));
  await fs.chmod(install, 0o755);
  execFileSync('cp', ['-al', modules, join(install, 'node_modules')]);
  await fs.mkdir(join(install, 'lib'));
  await fs.mkdir(join(install, 'bin'));
  await fs.link(node, join(install, 'lib', 'node'));
  await fs.writeFile(join(install, 'bin', 'code-server'), [
    '#!/bin/sh',
    'ROOT=$(dirname "$(dirname "$(readlink -f "$0")")")',
    'exec "$ROOT/lib/node" "$ROOT/node_modules/code-server/out/node/entry.js" "$@"', '',
  ].join('\n'), { mode: 0o755 });
  namespace = await testNamespace(cluster, 'devbox-copy');
  const libraries = editor.extraMounts.filter((m) => m.name !== 'editor-cache');
  runtime = new KubernetesWorkload({
    ...runtimeOptions(namespace.name, { command: ['sh', '/opt/editor-image/bin/code-server'], extraMounts: [...libraries, { name: 'editor-image', mountPath: '/opt/editor-image', hostPath: { path: install, type: 'Directory' } }] }, cluster),
    codeServerFrom: 'copy',
    resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '2Gi' } },
  });
  await runtime.synced();
});
afterAll(async () => {
  runtime?.dispose();
  await namespace?.remove();
  if (install) await fs.rm(install, { recursive: true, force: true });
});

/** The server's editor Pod once its editor answers /healthz, from this machine (Pods' addresses are reachable here). */
async function serving(name: string, ref: RuntimeRef): Promise<any> {
  return eventually(async () => {
    const pod = await getObject(cluster!, ['pod', `devbox-${name}-0`, '-n', namespace!.name]);
    if (pod?.metadata?.uid !== ref.uid || !pod.status?.podIP) return undefined;
    const res = await fetch(`http://${pod.status.podIP}:8080/healthz`).catch(() => undefined);
    return res?.ok && pod;
  }, 180_000, 500);
}

/** How long an init container ran, in seconds (the kubelet's times are to the second). */
function ranFor(pod: any, container: string): number {
  const state = pod.status.initContainerStatuses.find((c: { name: string }) => c.name === container).state.terminated;
  return (Date.parse(state.finishedAt) - Date.parse(state.startedAt)) / 1000;
}

describe.skipIf(!cluster || !editor)(cluster ? (editor ? 'code-server copied into the volume on the test cluster' : NO_EDITOR) : NO_CLUSTER, { timeout: 400_000 }, () => {
  it("copies code-server into the volume once, runs the editor from the copy in an image without one, copies nothing at the next start, and removes the copy once no start needs it", async () => {
    const first = await runtime!.start({ name: 'copied', port: 8080, image: TOOLCHAIN });
    const pod = await serving('copied', first.ref);
    expect(pod.spec.containers[0].image).toBe(TOOLCHAIN);
    expect(pod.spec.initContainers.map((c: { name: string }) => c.name)).toEqual(['prepare', 'provide-code-server']);
    const copied = provideReport(pod);
    expect(copied).toMatchObject({ copiedKiB: expect.any(Number) });
    const { copiedKiB, seconds } = copied as { copiedKiB: number; seconds: number };
    expect(copiedKiB).toBeGreaterThan(100 * 1024);
    console.log(`[measure] code-server copied into the volume: ${(copiedKiB / 1024).toFixed(0)} MiB in ${seconds} s (the init container ran ${ranFor(pod, 'provide-code-server')} s)`);

    // The editor runs the copy's Node.js, in the toolchain image.
    const processes = (await runtime!.client.exec(pod.metadata.name, 'editor', ['sh', '-c', 'ps -o args; toolchain-hello'])).stdout.toString();
    expect(processes).toMatch(/\/data\/editor\/code-server\/[0-9a-f]{16}\/lib\/node /);
    expect(processes).toContain("toolchain-hello: the repository's own toolchain");

    // Stopped and started again: the copy is kept, nothing copied.
    await runtime!.stop('copied', first.ref, 2000);
    await eventually(async () => (await getObject(cluster!, ['pod', 'devbox-copied-0', '-n', namespace!.name]))?.metadata?.uid !== first.ref.uid, 120_000, 500);
    const second = await runtime!.start({ name: 'copied', port: 8080, image: TOOLCHAIN });
    const again = await serving('copied', second.ref);
    expect(provideReport(again)).toEqual({ kept: true });
    console.log(`[measure] the next start's init container: ${ranFor(again, 'provide-code-server')} s (kept, nothing copied)`);

    // A start in the editor image itself (devcontainer.json's image gone): the copy goes with it.
    await runtime!.stop('copied', second.ref, 2000);
    await eventually(async () => (await getObject(cluster!, ['pod', 'devbox-copied-0', '-n', namespace!.name]))?.metadata?.uid !== second.ref.uid, 120_000, 500);
    const third = await runtime!.start({ name: 'copied', port: 8080 });
    const plain = await serving('copied', third.ref);
    expect(plain.spec.containers[0].image).toBe('devbox.local/busybox:1');
    expect((await runtime!.client.exec(plain.metadata.name, 'editor', ['ls', '/data/editor'])).stdout.toString().split('\n')).not.toContain('code-server');
  });
});
