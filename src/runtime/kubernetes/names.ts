// Names, labels and references of the Kubernetes runtime: every object of server `<name>` is
// called `<prefix><name>` (its Pod `<prefix><name>-0`, its storage helper `<prefix><name>-storage`)
// and carries the labels below. A reference names one Pod by namespace, name and uid; only a Pod
// with this server's labels, name and uid is ever its editor.
import { createHash } from 'node:crypto';
import type { RuntimeRef } from '../interface.ts';

export const MANAGED_BY = 'app.kubernetes.io/managed-by';
export const MANAGER = 'devbox-controller';
export const SERVER_LABEL = 'devbox.dev/server';
export const ROLE_LABEL = 'devbox.dev/role';
export const UID_LABEL = 'devbox.dev/uid';
export const FIELD_MANAGER = 'devbox-controller';
export const KIND = 'kubernetes';
/** The editor's container in its Pod. */
export const EDITOR_CONTAINER = 'editor';
/**
 * The code with which the editor's container ended, in Pods made by earlier versions, when it
 * found that the editor already ran in its Pod (it now waits instead: objects.ts): never the
 * editor's own exit, which is the run before it.
 */
export const ALREADY_RAN_EXIT = 123;
/** The first words of a container run after the editor's own in a Pod: a log reader stops at them (pod-logs.ts). */
export const ALREADY_RAN = 'devbox: the editor already ran in this Pod';
/** The editor Pod's init container: makes the volume's folders and reports what is in it (objects.ts). */
export const PREPARE_CONTAINER = 'prepare';
/** The storage helper Pod's one container. */
export const HELPER_CONTAINER = 'storage';
/** Where the server's volume is mounted, in the editor's Pod and the storage helper's. */
export const DATA_ROOT = '/data';
export const WORKSPACE = `${DATA_ROOT}/workspace`;
export const EDITOR_ROOT = `${DATA_ROOT}/editor`;
export const USER_DATA_DIR = `${EDITOR_ROOT}/data`;
export const EXTENSIONS_DIR = `${EDITOR_ROOT}/extensions`;
export const CONFIG_PATH = `${EDITOR_ROOT}/config.yaml`;
export const SETTINGS_FILE = `${USER_DATA_DIR}/User/settings.json`;
export const APPLIED_FILE = `${EDITOR_ROOT}/settings-applied.json`;

/** Room for `-0` or `-storage` and a StatefulSet's revision hash within a 63-character label. */
const MAX_OBJECT_NAME = 45;

export type Role = 'editor' | 'storage';

export class Names {
  readonly prefix: string;
  readonly namespace: string;

  constructor(prefix: string, namespace: string) {
    this.prefix = prefix;
    this.namespace = namespace;
  }

  /**
   * The anchor, the claim, the Service and the StatefulSet of the server. A StatefulSet's name
   * goes into a label with a hash after it (63 characters at most), so a long name is cut and
   * given a hash of the whole, which keeps names apart.
   */
  object(name: string): string {
    const whole = `${this.prefix}${name}`;
    if (whole.length <= MAX_OBJECT_NAME) return whole;
    const hash = createHash('sha256').update(name).digest('hex').slice(0, 8);
    return `${whole.slice(0, MAX_OBJECT_NAME - 9).replace(/-+$/, '')}-${hash}`;
  }

  /** The StatefulSet's only Pod. */
  editorPod(name: string): string {
    return `${this.object(name)}-0`;
  }

  storagePod(name: string): string {
    return `${this.object(name)}-storage`;
  }

  labels(name: string, role?: Role): Record<string, string> {
    return { [MANAGED_BY]: MANAGER, 'app.kubernetes.io/name': 'code-server', [SERVER_LABEL]: name, ...(role ? { [ROLE_LABEL]: role } : {}) };
  }

  /** The server a labelled object belongs to, when it is ours. */
  serverOf(metadata: { labels?: Record<string, string> } | undefined): string | undefined {
    const labels = metadata?.labels;
    return labels?.[MANAGED_BY] === MANAGER && typeof labels[SERVER_LABEL] === 'string' ? labels[SERVER_LABEL] : undefined;
  }

  refOf(pod: { metadata?: { name?: string; uid?: string } }): RuntimeRef {
    return { kind: KIND, namespace: this.namespace, pod: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' };
  }

  /** The Pod a reference names when it can be server `name`'s editor (this runtime, this namespace, that name); else undefined. */
  podOf(name: string, ref: RuntimeRef): { pod: string; uid: string } | undefined {
    const { kind, namespace, pod, uid } = ref;
    if (kind !== KIND || namespace !== this.namespace || pod !== this.editorPod(name)) return undefined;
    return typeof uid === 'string' && uid !== '' ? { pod, uid } : undefined;
  }
}

/** The server's uid as a label (a value Kubernetes accepts), else nothing. */
export function uidLabel(uid: string | undefined): Record<string, string> {
  return uid !== undefined && /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/.test(uid) ? { [UID_LABEL]: uid } : {};
}

/** `app.kubernetes.io/managed-by=devbox-controller`, optionally one server's. */
export function selector(name?: string, role?: Role): string {
  return [`${MANAGED_BY}=${MANAGER}`, ...(name ? [`${SERVER_LABEL}=${name}`] : []), ...(role ? [`${ROLE_LABEL}=${role}`] : [])].join(',');
}

/**
 * `sh -c READ_INSIDE read <root> <path> <maxBytes>`: prints the file at <path> under <root>, exit
 * 3 when there is none, and refuses (exit 4, 5) a link that leads out of <root> or a file over
 * <maxBytes>, so a repository's link never reads the container's other files.
 */
export const READ_INSIDE = [
  'case "$2" in /*|..|../*|*/..|*/../*) echo "must be a path inside the workspace, without \\"..\\"" >&2; exit 4;; esac',
  'root=$(realpath "$1") || exit 3; f=$(realpath "$1/$2" 2>/dev/null) || exit 3',
  'case "$f" in "$root"/*) ;; *) echo "a link to a file outside the workspace is not read" >&2; exit 4;; esac',
  '[ -f "$f" ] || exit 3',
  'size=$(wc -c < "$f"); [ "$size" -le "$3" ] || { echo "$size bytes, more than the $3 read" >&2; exit 5; }',
  'cat "$f"',
].join('\n');
