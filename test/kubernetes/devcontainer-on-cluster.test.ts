// devcontainer.json on the test cluster: a git repository made here carries one whose `image` is
// the cluster's toolchain image (devbox.local/toolchain:1, a marker program on its PATH) and whose
// hostRequirements ask for a quarter of a core and 256 MB. The workspace reaches the volume only
// once the first editor Pod runs, so the plan is read then, and the editor is started once more:
// the end state is a Pod whose editor container runs the toolchain image with the requirements as
// its requests, the real code-server (from the host's cache, brought by the config's mounts)
// serving through the proxy, and the toolchain there for what runs in the editor's container. A
// second repository asks for 64 cores: its server stays Pending with the scheduler's words; a
// third names an image the node cannot have: the kubelet's reason is the server's.
// Then the runtime alone: a command run in such an editor's container (EditorWorkload.run), and
// an abort that ends it.
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quantityValue } from '../../src/core/quantity.ts';
import { KubernetesWorkload } from '../../src/runtime/kubernetes/runtime.ts';
import { NO_CLUSTER, testCluster } from '../helpers/cluster.ts';
import { closeClusterService, editorPod, execInEditor, startClusterService } from '../helpers/cluster-service.ts';
import { realEditor, runtimeOptions, stubEditor, testNamespace } from '../helpers/kube-runtime.ts';
import { eventually, type TestService } from '../helpers/service.ts';
import { serveGitDaemon, type GitDaemon } from '../workspace/git-fixtures.ts';

const cluster = await testCluster();
if (!cluster) console.log(NO_CLUSTER);
const editor = realEditor();
const NO_EDITOR = 'there is no code-server in the cache (npm install puts it there), so the real editor is not run on the cluster';
if (cluster && !editor) console.log(NO_EDITOR);

const TOOLCHAIN = 'devbox.local/toolchain:1';
const MARKER = "toolchain-hello: the repository's own toolchain";
/** Two starts of the real code-server, one after the other, on a shared machine. */
const SETTLE_MS = 180_000;

let namespace: { name: string; remove(): Promise<void> };
let ns: string;
let service: TestService;
let repos: string;
let daemon: GitDaemon;

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.invalid', '-c', 'init.defaultBranch=main', ...args], { cwd, stdio: 'pipe' });

/** A repository `name` with its devcontainer.json (JSON with comments, as people write it). */
async function repository(name: string, devcontainer: string): Promise<void> {
  const dir = join(repos, name);
  await fs.mkdir(join(dir, '.devcontainer'), { recursive: true });
  await fs.writeFile(join(dir, 'README.md'), `# ${name}\n`);
  await fs.writeFile(join(dir, '.devcontainer', 'devcontainer.json'), devcontainer);
  git(dir, 'init', '-q');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'first');
}

/** A manifest file for a running server whose workspace is repository `repo`. */
async function declare(name: string, repo: string): Promise<void> {
  const manifest = [
    'apiVersion: devbox.dev/v1alpha1', 'kind: EditorServer', `metadata: {name: ${name}}`,
    'spec:', `  displayName: ${name}`, '  running: true',
    `  workspace: {source: {git: {url: "${daemon.url(repo)}"}}}`, '',
  ].join('\n');
  const staged = join(service.root, `${name}.yaml`);
  await fs.writeFile(staged, manifest);
  await fs.copyFile(staged, join(service.settings.manifestsDir, `${name}.yaml`));
}

/** The server's list entry (GET /servers), by manifest name. */
async function listed(name: string): Promise<any> {
  const list: any[] = (await service.request('GET', '/servers')).body;
  return list.find((s) => s.manifest === name);
}

beforeAll(async () => {
  if (!cluster || !editor) return;
  repos = await fs.mkdtemp(join(tmpdir(), 'devbox-devcontainer-repos-'));
  await repository('toolchain', [
    '{',
    '  // The repository\'s own image: its toolchain, with code-server brought to it.',
    `  "image": "${TOOLCHAIN}",`,
    '  "hostRequirements": { "cpus": 0.25, "memory": "256mb", "storage": "20gb" },',
    '  "containerEnv": { "PROJECT_KIND": "toolchain-demo" },',
    '  "postCreateCommand": "toolchain-hello > made-by-post-create.txt; echo \\"kind $PROJECT_KIND\\" >> made-by-post-create.txt",',
    '}',
  ].join('\n'));
  await repository('too-big', '{ "image": "devbox.local/toolchain:1", "hostRequirements": { "cpus": 64 } }');
  await repository('no-image', '{ "image": "devbox.local/no-such-image:1" }');
  daemon = await serveGitDaemon(repos);
  namespace = await testNamespace(cluster, 'devbox-e2e-dc');
  ns = namespace.name;
  service = await startClusterService(cluster, ns, editor, {
    config: { workspace: { gitSchemes: ['git'], cloneTimeoutSeconds: 60, maxUploadMb: 10 }, editor: { startTimeoutSeconds: 120, readyTimeoutSeconds: 120 } },
  });
});
afterAll(async () => {
  if (service) await closeClusterService(service);
  await namespace?.remove();
  await daemon?.stop();
  if (repos) await fs.rm(repos, { recursive: true, force: true });
});

const title = !cluster ? `devcontainer.json on the test cluster (${NO_CLUSTER})` : !editor ? `devcontainer.json on the test cluster (${NO_EDITOR})` : 'devcontainer.json on the test cluster';

describe.skipIf(!cluster || !editor)(title, { timeout: 400_000 }, () => {
  it("runs the editor in the repository's image with its host requirements as the Pod's requests, code-server serving through the proxy and the toolchain inside", async () => {
    await declare('toolchain', 'toolchain');
    // The end state: the Pod's editor container runs the toolchain image, and is ready.
    const pod = await eventually(async () => {
      const found = await editorPod(cluster!, ns, 'toolchain');
      const status = found?.status?.containerStatuses?.find((c: { name: string }) => c.name === 'editor');
      return !found?.metadata?.deletionTimestamp && status?.ready === true && found.spec.containers[0].image === TOOLCHAIN && found;
    }, SETTLE_MS, 500);
    const entry = await eventually(async () => {
      const found = await listed('toolchain');
      return found?.status === 'running' && found;
    }, SETTLE_MS, 500);
    expect(entry.devcontainer).toMatchObject({ state: 'applied', plan: { path: '.devcontainer/devcontainer.json', image: TOOLCHAIN, hostRequirements: { cpus: 0.25 } } });
    const memoryBytes: number = entry.devcontainer.plan.hostRequirements.memoryBytes;
    expect(memoryBytes).toBeGreaterThanOrEqual(244 * 2 ** 20);

    // Its requests are the host requirements (the config's limit stays).
    const [container] = pod.spec.containers;
    expect(quantityValue(container.resources.requests.cpu)).toBe(0.25);
    expect(quantityValue(container.resources.requests.memory)).toBe(Math.ceil(memoryBytes / 2 ** 20) * 2 ** 20);
    expect(container.resources.limits.memory).toBe('1Gi');
    // The volume was made at the first start, before the file was read, and the test cluster's
    // StorageClass cannot expand it: the server says so, and keeps the volume it has.
    const said = await eventually(async () => {
      const text = JSON.stringify((await service.request('GET', `/servers/${entry.id}/logs`)).body);
      return text.includes('hostRequirements.storage asks for 20Gi') && text;
    }, 30_000, 500);
    expect(said).toContain('cannot be expanded');
    // code-server came from the config's mounts (the host's cache): no copy into the volume.
    expect(pod.spec.initContainers.map((c: { name: string }) => c.name)).toEqual(['prepare']);

    // code-server serves through the proxy, from the toolchain image.
    const page = await eventually(async () => {
      const res = await fetch(`${service.url}/vscode/${entry.port}/?folder=/data/workspace`);
      return res.status === 200 && res.text();
    }, 60_000, 500);
    expect(page).toContain('<meta id="vscode-workbench-web-configuration"');

    // The toolchain is there for what runs in the editor's container, with the repository's variables.
    expect(await execInEditor(cluster!, ns, 'toolchain', 'toolchain-hello')).toBe(MARKER);
    expect(await execInEditor(cluster!, ns, 'toolchain', 'echo "$PROJECT_KIND $HOME"; cat /data/workspace/README.md')).toBe('toolchain-demo /data/editor/home\n# toolchain');
    // The lifecycle command ran in the editor's container, in the workspace, with the toolchain and the variables.
    const ran = await eventually(async () => {
      const r = await listed('toolchain');
      return r?.devcontainer?.lifecycle?.postCreateCommand?.state === 'Succeeded' && r;
    }, 60_000, 500);
    expect(ran.conditions.find((c: { type: string }) => c.type === 'LifecycleCommands')).toMatchObject({ status: 'True' });
    expect(await execInEditor(cluster!, ns, 'toolchain', 'cat /data/workspace/made-by-post-create.txt')).toBe(`${MARKER}\nkind toolchain-demo`);
  });

  it('leaves a server whose host requirements no node can meet Pending, with the scheduler\'s words', async () => {
    await declare('too-big', 'too-big');
    const entry = await eventually(async () => {
      const found = await listed('too-big');
      return found?.reason === 'Unschedulable' && found;
    }, SETTLE_MS, 500);
    expect(entry).toMatchObject({ phase: 'Pending', status: 'starting', devcontainer: { state: 'applied', plan: { hostRequirements: { cpus: 64 } } } });
    expect(entry.message).toMatch(/Insufficient cpu/);
    const pod = await editorPod(cluster!, ns, 'too-big');
    expect(quantityValue(pod.spec.containers[0].resources.requests.cpu)).toBe(64);
    expect(pod.spec.nodeName).toBeUndefined();
  });

  it("shows an image the node cannot have in the server's status, with the kubelet's words", async () => {
    await declare('no-image', 'no-image');
    const entry = await eventually(async () => {
      const found = await listed('no-image');
      return found?.reason === 'ErrImageNeverPull' && found;
    }, SETTLE_MS, 500);
    expect(entry).toMatchObject({ phase: 'Starting', devcontainer: { state: 'applied', plan: { image: 'devbox.local/no-such-image:1' } } });
    expect(entry.message).toContain('devbox.local/no-such-image:1');
  });
});

describe.skipIf(!cluster)(cluster ? 'a command in the editor container on the test cluster' : `a command in the editor container on the test cluster (${NO_CLUSTER})`, { timeout: 200_000 }, () => {
  let runtime: KubernetesWorkload | undefined;
  let own: { name: string; remove(): Promise<void> } | undefined;
  afterAll(async () => {
    runtime?.dispose();
    await own?.remove();
  });

  it("runs in the workspace with the variables given, its lines as they come and its exit code, and an abort ends it and what it started", async () => {
    own = await testNamespace(cluster!, 'devbox-run');
    runtime = new KubernetesWorkload(runtimeOptions(own.name, stubEditor(), cluster!));
    await runtime.synced();
    const { ref } = await runtime.start({ name: 'runner', port: 8080, image: TOOLCHAIN, env: { PROJECT_KIND: 'toolchain-demo' } });
    await eventually(() => runtime!.state('runner', ref).state === 'running' && runtime!.storage.storageDeferred('runner') === false, 60_000, 250);

    const lines: string[] = [];
    const onOutput = (stream: 'stdout' | 'stderr', line: string) => lines.push(`${stream}: ${line}`);
    const end = await runtime.run('runner', ref, { shell: 'pwd; toolchain-hello; echo "$PROJECT_KIND $EXTRA"; echo warn >&2; exit 4' }, {
      cwd: '/data/workspace', env: { EXTRA: 'from the run' }, signal: new AbortController().signal, onOutput,
    });
    expect(end).toEqual({ exitCode: 4 });
    expect(lines.filter((l) => l.startsWith('stdout'))).toEqual(['stdout: /data/workspace', `stdout: ${MARKER}`, 'stdout: toolchain-demo from the run']);
    expect(lines).toContain('stderr: warn');

    // An abort: the command and the process it left in the background both end.
    lines.length = 0;
    const abort = new AbortController();
    const running = runtime.run('runner', ref, { shell: 'sleep 900 & echo started; wait' }, { cwd: '/data/workspace', env: {}, signal: abort.signal, onOutput });
    await eventually(() => lines.includes('stdout: started'), 30_000, 100);
    const sleeping = async () => (await runtime!.client.exec(`devbox-runner-0`, 'editor', ['sh', '-c', 'ps -o pid,stat,args | grep "[s]leep 900" | grep -v " Z " || true'])).stdout.toString().trim();
    expect(await sleeping()).not.toBe('');
    abort.abort();
    expect(await running).toEqual({ exitCode: null, signal: 'SIGTERM' });
    await eventually(async () => (await sleeping()) === '', 20_000, 250);
  });
});
