// The config's runtime section: where editors run, and how a cluster's objects are made; the
// variables that win over it; every problem named at its field.
import { promises as fs } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { pendingRestart } from '../../src/config/changes.ts';
import { runtimeFrom } from '../../src/config/runtime-config.ts';
import { DEFAULT_CONFIG, loadConfig, loadSettings, parseConfig, SettingsError } from '../../src/config/settings.ts';
import { PACKAGE_JSON } from '../../src/core/project.ts';
import { DEFAULT_EDITOR_IMAGE } from '../../src/runtime/kubernetes/options.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await fs.rm(dir, { recursive: true, force: true });
});

/** The problems of a config text, each as "line:column: problem". */
function problemsOf(text: string): string[] {
  const read = parseConfig('config.yaml', text);
  return read.problems ? read.problems.map((p) => `${p.line}:${p.column}: ${p.problem}`) : [];
}

const noFile = () => undefined;

describe('runtime in the config file', () => {
  it('defaults to local processes, with the documented defaults for a cluster', () => {
    expect(DEFAULT_CONFIG.runtime).toEqual({
      kind: 'process',
      kubernetes: {
        source: 'files',
        imagePullPolicy: 'IfNotPresent',
        command: ['code-server'],
        storage: { size: '10Gi' },
        resources: { requests: { cpu: '500m', memory: '1Gi' }, limits: { memory: '2Gi' } },
        runAsUser: 1000,
        extraMounts: [],
        env: {},
        namePrefix: 'devbox-',
        leaderElection: false,
      },
    });
  });

  it('gives the Kubernetes runtime a range of route numbers for a fleet when the file gives no ports, and keeps a range it gives', () => {
    const ports = (text: string) => {
      const read = parseConfig('config.yaml', text);
      if (read.problems) throw new Error(JSON.stringify(read.problems));
      return read.config.ports;
    };
    expect(ports('runtime:\n  kind: kubernetes\n')).toEqual({ min: 10000, max: 59999 });
    expect(ports('runtime:\n  kind: kubernetes\nports:\n  min: 9000\n  max: 9100\n')).toEqual({ min: 9000, max: 9100 });
    // Local processes bind each port on this machine: the small default stays.
    expect(ports('runtime:\n  kind: process\n')).toEqual(DEFAULT_CONFIG.ports);
  });

  it('is laid over the defaults: kubernetes and its storage key by key, resources replaced whole', () => {
    const read = parseConfig('config.yaml', [
      'runtime:',
      '  kind: kubernetes',
      '  kubernetes:',
      '    namespace: editors',
      '    storage: { storageClassName: fast }',
      '    resources: { limits: { cpu: "2", memory: 4Gi } }',
      '    extraMounts: [{ name: tools, mountPath: /opt/tools, readOnly: true, hostPath: { path: /srv/tools } }]',
      '    env: { HTTPS_PROXY: "http://proxy:3128" }',
    ].join('\n'));
    if (read.problems) throw new Error(read.problems.map((p) => p.problem).join('; '));
    expect(read.config.runtime).toEqual({
      kind: 'kubernetes',
      kubernetes: {
        ...DEFAULT_CONFIG.runtime.kubernetes,
        namespace: 'editors',
        storage: { size: '10Gi', storageClassName: 'fast' },
        resources: { limits: { cpu: '2', memory: '4Gi' } },
        extraMounts: [{ name: 'tools', mountPath: '/opt/tools', readOnly: true, hostPath: { path: '/srv/tools' } }],
        env: { HTTPS_PROXY: 'http://proxy:3128' },
      },
    });
  });

  it.each([
    ['kind: docker', 'runtime.kind: must be equal to one of the allowed values (process, kubernetes)'],
    ['kubernetes: { resources: { requests: { memory: 1 GB } } }', 'runtime.kubernetes.resources.requests.memory: must be a Kubernetes quantity'],
    ['kubernetes: { resources: { limits: { cpu: 2 } } }', 'runtime.kubernetes.resources.limits.cpu: must be a Kubernetes quantity'],
    ['kubernetes: { resources: { limits: { gpu: "1" } } }', 'runtime.kubernetes.resources.limits: unknown field "gpu"'],
    ['kubernetes: { storage: { size: ten } }', 'runtime.kubernetes.storage.size: must be a Kubernetes quantity'],
    ['kubernetes: { namespace: Editors }', 'runtime.kubernetes.namespace: must match pattern'],
    ['kubernetes: { namePrefix: "Dev_" }', 'runtime.kubernetes.namePrefix: must match pattern'],
    ['kubernetes: { runAsUser: 0 }', 'runtime.kubernetes.runAsUser: must be >= 1'],
    ['kubernetes: { imagePullPolicy: Sometimes }', 'runtime.kubernetes.imagePullPolicy: must be equal to one of the allowed values'],
    ['kubernetes: { command: [] }', 'runtime.kubernetes.command: must NOT have fewer than 1 items'],
    ['kubernetes: { env: { "A B": x } }', 'runtime.kubernetes.env: property name must be valid'],
  ])('refuses %s, naming the field', (section, message) => {
    const problems = problemsOf(`runtime:\n  ${section}\n`);
    expect(problems.length).toBeGreaterThan(0);
    expect(problems.join('\n')).toContain(message);
  });

  it('refuses a request above its limit, a mount that is neither or both kinds, one over the server\'s volume, and a name used twice', () => {
    expect(problemsOf([
      'runtime:',
      '  kubernetes:',
      '    resources:',
      '      requests: { memory: 3Gi }',
      '      limits: { memory: 2Gi }',
      '    extraMounts:',
      '      - { name: a, mountPath: /opt/a }',
      '      - { name: b, mountPath: /data/b, hostPath: { path: /b } }',
      '      - { name: b, mountPath: /opt/b, hostPath: { path: /b }, configMap: { name: b } }',
    ].join('\n'))).toEqual([
      '4:27: runtime.kubernetes.resources.requests.memory: "3Gi" is more than limits.memory ("2Gi"): a request may not exceed its limit; lower the request or raise the limit',
      '7:9: runtime.kubernetes.extraMounts.0: mount "a" must give exactly one of hostPath or configMap',
      '8:31: runtime.kubernetes.extraMounts.1.mountPath: "/data/b" would cover the server\'s volume at /data: mount it somewhere else, such as /opt/b',
      '9:9: runtime.kubernetes.extraMounts.2: mount "b" must give exactly one of hostPath or configMap',
      '9:17: runtime.kubernetes.extraMounts.2.name: "b" is the name of an earlier mount: give each mount its own name',
    ]);
  });

  it('stops the service at start-up with the file\'s problems', async () => {
    const dir = await fs.mkdtemp(join(tmpdir(), 'devbox-runtime-config-'));
    dirs.push(dir);
    const file = join(dir, 'config.yaml');
    await fs.writeFile(file, 'runtime:\n  kubernetes:\n    storage: { size: 10 GB }\n');
    expect(() => loadConfig(file)).toThrow(SettingsError);
    expect(() => loadConfig(file)).toThrow(`${file}:3:22: runtime.kubernetes.storage.size: must be a Kubernetes quantity`);
  });

  it('is read at start-up, except the default resources: an edit of the rest waits for a restart', () => {
    const edited = structuredClone(DEFAULT_CONFIG);
    edited.runtime.kind = 'kubernetes';
    edited.runtime.kubernetes.namespace = 'editors';
    edited.runtime.kubernetes.resources = { limits: { memory: '4Gi' } };
    expect(pendingRestart(DEFAULT_CONFIG, edited)).toEqual([
      'runtime.kind: "process" -> "kubernetes" takes effect after a restart',
      'runtime.kubernetes.namespace: (unset) -> "editors" takes effect after a restart',
    ]);
  });
});

describe('the runtime the service starts', () => {
  it('is the config\'s runtime.kind unless DEVBOX_RUNTIME says otherwise', () => {
    const kubernetes = { ...structuredClone(DEFAULT_CONFIG.runtime), kind: 'kubernetes' as const };
    expect(runtimeFrom({}, DEFAULT_CONFIG.runtime, noFile)).toEqual({ kind: 'process' });
    expect(runtimeFrom({ DEVBOX_RUNTIME: 'kubernetes' }, DEFAULT_CONFIG.runtime, noFile).kind).toBe('kubernetes');
    expect(runtimeFrom({ DEVBOX_RUNTIME: 'process' }, kubernetes, noFile)).toEqual({ kind: 'process' });
    expect(runtimeFrom({}, kubernetes, noFile).kind).toBe('kubernetes');
    expect(loadSettings({ DEVBOX_RUNTIME: 'process' }).runtime).toEqual({ kind: 'process' });
    expect(() => loadSettings({ DEVBOX_RUNTIME: 'docker' })).toThrow(SettingsError);
    expect(() => loadSettings({ DEVBOX_RUNTIME: 'docker' })).toThrow('DEVBOX_RUNTIME="docker" must be process or kubernetes');
  });

  it('takes its namespace from DEVBOX_K8S_NAMESPACE, else the config, else the one the service runs in, else default', () => {
    const env = { DEVBOX_RUNTIME: 'kubernetes' };
    const configured = structuredClone(DEFAULT_CONFIG.runtime);
    configured.kubernetes.namespace = 'from-config';
    const inCluster = () => 'from-pod\n';
    const namespaceOf = (settings: ReturnType<typeof runtimeFrom>) => (settings.kind === 'kubernetes' ? [settings.kubernetes.namespace, settings.namespaceFrom] : undefined);
    expect(namespaceOf(runtimeFrom({ ...env, DEVBOX_K8S_NAMESPACE: 'from-env' }, configured, inCluster))).toEqual(['from-env', 'DEVBOX_K8S_NAMESPACE']);
    expect(namespaceOf(runtimeFrom(env, configured, inCluster))).toEqual(['from-config', 'runtime.kubernetes.namespace']);
    expect(namespaceOf(runtimeFrom(env, DEFAULT_CONFIG.runtime, inCluster))).toEqual(['from-pod', 'the namespace the service runs in']);
    expect(namespaceOf(runtimeFrom(env, DEFAULT_CONFIG.runtime, noFile))).toEqual(['default', 'the default']);
    expect(() => runtimeFrom({ ...env, DEVBOX_K8S_NAMESPACE: 'No_Such' }, DEFAULT_CONFIG.runtime, noFile)).toThrow('DEVBOX_K8S_NAMESPACE="No_Such" is not a namespace name');
  });

  it('elects a leader when DEVBOX_LEADER_ELECTION=1 or the config says so, with the Kubernetes runtime only', () => {
    const env = { DEVBOX_RUNTIME: 'kubernetes' };
    const configured = structuredClone(DEFAULT_CONFIG.runtime);
    configured.kubernetes.leaderElection = true;
    const elects = (settings: ReturnType<typeof runtimeFrom>) => settings.kind === 'kubernetes' && settings.kubernetes.leaderElection;
    expect(elects(runtimeFrom(env, DEFAULT_CONFIG.runtime, noFile))).toBe(false);
    expect(elects(runtimeFrom({ ...env, DEVBOX_LEADER_ELECTION: '1' }, DEFAULT_CONFIG.runtime, noFile))).toBe(true);
    expect(elects(runtimeFrom(env, configured, noFile))).toBe(true);
    expect(elects(runtimeFrom({ ...env, DEVBOX_LEADER_ELECTION: '0' }, configured, noFile))).toBe(false);
    expect(() => runtimeFrom({ ...env, DEVBOX_LEADER_ELECTION: 'yes' }, DEFAULT_CONFIG.runtime, noFile)).toThrow('DEVBOX_LEADER_ELECTION="yes" must be 1 (on) or 0 (off)');
    expect(() => loadSettings({ DEVBOX_LEADER_ELECTION: '1' })).toThrow('DEVBOX_LEADER_ELECTION=1 needs the Kubernetes runtime');
  });

  it('takes the manifests from the config\'s runtime.kubernetes.source unless DEVBOX_K8S_SOURCE says otherwise', () => {
    const env = { DEVBOX_RUNTIME: 'kubernetes' };
    const crd = structuredClone(DEFAULT_CONFIG.runtime);
    crd.kubernetes.source = 'crd';
    const sourceOf = (settings: ReturnType<typeof runtimeFrom>) => (settings.kind === 'kubernetes' ? settings.kubernetes.source : undefined);
    expect(sourceOf(runtimeFrom(env, DEFAULT_CONFIG.runtime, noFile))).toBe('files');
    expect(sourceOf(runtimeFrom(env, crd, noFile))).toBe('crd');
    expect(sourceOf(runtimeFrom({ ...env, DEVBOX_K8S_SOURCE: 'crd' }, DEFAULT_CONFIG.runtime, noFile))).toBe('crd');
    expect(sourceOf(runtimeFrom({ ...env, DEVBOX_K8S_SOURCE: 'files' }, crd, noFile))).toBe('files');
    expect(() => runtimeFrom({ ...env, DEVBOX_K8S_SOURCE: 'etcd' }, DEFAULT_CONFIG.runtime, noFile)).toThrow('DEVBOX_K8S_SOURCE="etcd" must be files or crd');
    expect(problemsOf('runtime: { kubernetes: { source: git } }').join('\n')).toMatch(/source/);
  });

  it('takes a persistence target with the Kubernetes runtime as with local processes', () => {
    const settings = loadSettings({ DEVBOX_RUNTIME: 'kubernetes', DEVBOX_PERSIST_TO: '/mnt/devbox' });
    expect(settings.runtime?.kind).toBe('kubernetes');
    expect(settings.persist?.target).toEqual({ kind: 'folder', dir: '/mnt/devbox' });
  });

  it('reads a kubeconfig path as the operator wrote it: relative to the working folder, ~ for the home folder', () => {
    const runtime = structuredClone(DEFAULT_CONFIG.runtime);
    runtime.kind = 'kubernetes';
    const kubeconfigOf = (path: string) => {
      runtime.kubernetes.kubeconfig = path;
      const settings = runtimeFrom({}, runtime, noFile);
      return settings.kind === 'kubernetes' ? settings.kubernetes.kubeconfig : undefined;
    };
    expect(kubeconfigOf('~/.kube/config')).toBe(join(homedir(), '.kube/config'));
    expect(kubeconfigOf('cluster.yaml')).toBe(join(process.cwd(), 'cluster.yaml'));
  });
});

describe('the editor image', () => {
  it('is code-server\'s published image at the version the project pins', () => {
    expect(DEFAULT_EDITOR_IMAGE).toBe(`docker.io/codercom/code-server:${PACKAGE_JSON.devbox.codeServer}`);
  });
});
