// The objects of one server, as the Kubernetes runtime applies them (server-side apply: each is
// the whole of what this service says about the object). Pure builders: no API calls here.
//   ConfigMap   <prefix><name>          the anchor: every other object is its dependent, so
//                                       deleting it collects the server's objects;
//   PVC         <prefix><name>          the workspace and the editor's data, kept across stops;
//   Service     <prefix><name>          headless: the StatefulSet's governing Service;
//   StatefulSet <prefix><name>          one replica while running, zero while stopped; its Pod's
//                                       init container prepares the volume (folders, the editor's
//                                       config) and reports what it holds (prepare.ts);
//   Pod         <prefix><name>-storage  a short-lived helper that mounts the volume, only for a
//                                       storage call made while no editor runs (the controller
//                                       makes none: it waits for the editor).
// StatefulSet rather than Deployment: at most one Pod of a server at any time (a Deployment's
// rolling update starts the new Pod before the old one ends, two editors on one ReadWriteOnce
// volume), and a stable Pod name the runtime can check references against.
import type { ResourceRequirements } from '../interface.ts';
import {
  ALREADY_RAN, CONFIG_PATH, uidLabel, DATA_ROOT, EDITOR_CONTAINER, EDITOR_ROOT, EXTENSIONS_DIR, HELPER_CONTAINER, PREPARE_CONTAINER, USER_DATA_DIR, WORKSPACE, type Names,
} from './names.ts';
import { COPIES_DIR, foreignEditor } from './foreign-image.ts';
import { PREPARE_SCRIPT } from './prepare.ts';
import type { KubernetesRuntimeOptions } from './options.ts';

/** A Kubernetes object as applied: plain JSON. */
export type KubeObject = { apiVersion: string; kind: string; metadata: Record<string, unknown> & { name: string; namespace?: string } } & Record<string, unknown>;

export interface Owner {
  uid: string;
  name: string;
}

/** What a start asks of the editor's container beyond its port and resources (StartSpec's image and env). */
export interface EditorExtras {
  /** An image of the server's own (devcontainer.json's `image`); code-server is brought to it (foreign-image.ts). */
  image?: string;
  /** Variables over the runtime's own, in the editor's container. */
  env?: Record<string, string>;
}

/** The code-server arguments the editor runs with in its Pod: the process runtime's, on the Pod's address and the volume's folders. */
export function editorArgs(port: number): string[] {
  return [
    '--bind-addr', `0.0.0.0:${port}`,
    '--auth', 'none',
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-workspace-trust',
    // As on one machine: the service's proxy forwards the Pod's ports (to the Pod's address), not code-server's.
    '--disable-proxy',
    '--config', CONFIG_PATH,
    '--user-data-dir', USER_DATA_DIR,
    '--extensions-dir', EXTENSIONS_DIR,
    WORKSPACE,
  ];
}

export class ServerObjects {
  readonly #names: Names;
  readonly #options: KubernetesRuntimeOptions;

  constructor(names: Names, options: KubernetesRuntimeOptions) {
    this.#names = names;
    this.#options = options;
  }

  #meta(name: string, objectName: string, owner?: Owner, role?: 'editor' | 'storage') {
    return {
      name: objectName,
      namespace: this.#names.namespace,
      labels: this.#names.labels(name, role),
      ...(owner ? { ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: owner.name, uid: owner.uid, blockOwnerDeletion: true }] } : {}),
    };
  }

  anchor(name: string): KubeObject {
    return {
      apiVersion: 'v1', kind: 'ConfigMap',
      metadata: this.#meta(name, this.#names.object(name)),
      data: { server: name, note: 'Owns every object of this editor server: deleting it removes them all, its volume included.' },
    };
  }

  /** The volume's claim; `size` (claim-size.ts) over the configured size. */
  claim(name: string, owner: Owner, size = this.#options.storage.size): KubeObject {
    const { storageClassName } = this.#options.storage;
    return {
      apiVersion: 'v1', kind: 'PersistentVolumeClaim',
      metadata: this.#meta(name, this.#names.object(name), owner),
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: size } },
        ...(storageClassName ? { storageClassName } : {}),
      },
    };
  }

  service(name: string, owner: Owner, port: number): KubeObject {
    return {
      apiVersion: 'v1', kind: 'Service',
      metadata: this.#meta(name, this.#names.object(name), owner),
      spec: {
        clusterIP: 'None',
        selector: this.#names.labels(name, 'editor'),
        // Server-side apply of a Service needs the protocol spelled out (Kubernetes 1.20).
        ports: [{ name: 'http', port, targetPort: port, protocol: 'TCP' }],
      },
    };
  }

  /** The editor listens on the server's route number on its own Pod's address (each Pod has its own: no two collide). */
  statefulSet(name: string, owner: Owner, replicas: 0 | 1, port: number, resources: ResourceRequirements | undefined, uid?: string, extras: EditorExtras = {}): KubeObject {
    const labels = this.#names.labels(name, 'editor');
    const meta = this.#meta(name, this.#names.object(name), owner);
    const foreign = foreignEditor(this.#options, extras.image);
    const init = (container: { name: string; command: string[] }) => ({
      ...container,
      image: this.#options.image,
      imagePullPolicy: this.#options.imagePullPolicy,
      env: this.#env(),
      resources: mergeResources(this.#options.resources, resources),
      securityContext: CONTAINER_SECURITY,
      volumeMounts: this.#mounts(),
    });
    return {
      apiVersion: 'apps/v1', kind: 'StatefulSet',
      metadata: { ...meta, labels: { ...meta.labels, ...uidLabel(uid) } },
      spec: {
        replicas,
        serviceName: this.#names.object(name),
        // The selector never changes (Kubernetes refuses that): the server's name and role.
        selector: { matchLabels: labels },
        template: {
          metadata: { labels: { ...labels, ...uidLabel(uid) } },
          spec: {
            ...this.#podBasics(),
            terminationGracePeriodSeconds: 10,
            // The volume made ready in the editor's own Pod: no other Pod is needed to start it.
            initContainers: [
              // A copy of code-server (foreign-image.ts) an earlier start left goes once no start needs it: it holds hundreds of MB.
              init({ name: PREPARE_CONTAINER, command: ['sh', '-c', foreign?.init ? PREPARE_SCRIPT : `rm -rf ${COPIES_DIR}\n${PREPARE_SCRIPT}`] }),
              // In an image of the server's own, code-server copied into the volume (when the mounts do not hold it).
              ...(foreign?.init ? [init(foreign.init)] : []),
            ],
            containers: [{
              name: EDITOR_CONTAINER,
              image: foreign ? extras.image : this.#options.image,
              imagePullPolicy: this.#options.imagePullPolicy,
              // Run once per Pod: the controller's restartPolicy decides about a second run, not the kubelet.
              command: ['sh', '-c', RUN_ONCE, 'code-server', ...(foreign?.command ?? this.#options.command)],
              args: editorArgs(port),
              ports: [{ name: 'http', containerPort: port, protocol: 'TCP' }],
              env: this.#env(extras.env),
              readinessProbe: { httpGet: { path: '/healthz', port }, periodSeconds: 2, timeoutSeconds: 2, failureThreshold: 3 },
              resources: mergeResources(this.#options.resources, resources),
              securityContext: CONTAINER_SECURITY,
              volumeMounts: this.#mounts(),
            }],
            volumes: this.#volumes(name),
          },
        },
      },
    };
  }

  /** A helper Pod that mounts the server's volume and waits, for the storage calls while the editor is stopped. */
  storagePod(name: string, owner: Owner): KubeObject {
    return {
      apiVersion: 'v1', kind: 'Pod',
      metadata: this.#meta(name, this.#names.storagePod(name), owner, 'storage'),
      spec: {
        ...this.#podBasics(),
        restartPolicy: 'Never',
        // It lives while the storage is being prepared; an hour bounds one a service forgot.
        activeDeadlineSeconds: 3600,
        terminationGracePeriodSeconds: 1,
        containers: [{
          name: HELPER_CONTAINER,
          image: this.#options.image,
          imagePullPolicy: this.#options.imagePullPolicy,
          command: ['sh', '-c', `mkdir -p ${WORKSPACE} ${EDITOR_ROOT}; trap 'exit 0' TERM; sleep 3600 & wait`],
          env: this.#env(),
          resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: this.#options.resources.limits?.memory ?? '2Gi' } },
          securityContext: CONTAINER_SECURITY,
          volumeMounts: this.#mounts(),
        }],
        volumes: this.#volumes(name),
      },
    };
  }

  #podBasics() {
    const id = this.#options.runAsUser;
    return {
      // The editor has no business with the cluster's API.
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      securityContext: { runAsNonRoot: true, runAsUser: id, runAsGroup: id, fsGroup: id },
    };
  }

  /**
   * The container's variables: the server's own (`own`, from devcontainer.json) under the fixed
   * ones and the config's, so a repository never moves HOME off the volume. `$(` in its values
   * is escaped: the kubelet would otherwise read `$(NAME)` as a reference to another variable.
   */
  #env(own: Record<string, string> = {}) {
    // Everything code-server and its tools write goes to the volume, never the image.
    const fixed = { HOME: `${EDITOR_ROOT}/home`, XDG_CONFIG_HOME: `${EDITOR_ROOT}/home/.config`, XDG_DATA_HOME: `${EDITOR_ROOT}/home/.local/share` };
    const escaped = Object.fromEntries(Object.entries(own).map(([name, value]) => [name, value.replaceAll('$(', '$$$$(')]));
    return Object.entries({ ...escaped, ...fixed, ...this.#options.env }).map(([name, value]) => ({ name, value }));
  }

  #mounts() {
    return [
      { name: 'data', mountPath: DATA_ROOT },
      { name: 'run', mountPath: RUN_DIR },
      ...this.#options.extraMounts.map((m) => ({ name: m.name, mountPath: m.mountPath, readOnly: m.readOnly ?? true })),
    ];
  }

  #volumes(name: string) {
    return [
      { name: 'data', persistentVolumeClaim: { claimName: this.#names.object(name) } },
      { name: 'run', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
      ...this.#options.extraMounts.map((m) => ({
        name: m.name,
        ...(m.hostPath ? { hostPath: m.hostPath } : {}),
        ...(m.configMap ? { configMap: m.configMap } : {}),
      })),
    ];
  }
}

/** A folder of the Pod's own (it outlives a container, not the Pod). */
const RUN_DIR = '/run/devbox';

/**
 * The editor's container runs the editor once. A StatefulSet's Pod restarts a container that
 * ended (restartPolicy Always, fixed); the second run finds the marker, says so and waits
 * (it never starts the editor), so an editor that crashed is not silently started again: the
 * runtime reports the exit and the controller's spec.restartPolicy decides, as with local
 * processes. It waits rather than ends: a second ended run would let the kubelet remove the
 * editor's own run, and its log with it (it keeps one ended run per container).
 */
const RUN_ONCE = `if [ -e ${RUN_DIR}/started ]; then echo "${ALREADY_RAN}: the controller decides whether it starts again" >&2; trap 'exit 0' TERM INT; sleep 2147483647 & wait $!; exit 0; fi; : > ${RUN_DIR}/started; exec "$@"`;

const CONTAINER_SECURITY = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };

/** A server's own requests and limits over the defaults, cpu and memory each. */
export function mergeResources(defaults: ResourceRequirements, own: ResourceRequirements | undefined): ResourceRequirements {
  const requests = { ...defaults.requests, ...own?.requests };
  const limits = { ...defaults.limits, ...own?.limits };
  return { ...(Object.keys(requests).length ? { requests } : {}), ...(Object.keys(limits).length ? { limits } : {}) };
}
