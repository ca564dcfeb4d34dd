// The EditorServer objects of one namespace, over the API server: list and watch (the transport
// of the project's own ListWatch), read, create, replace, delete, finalizers, and status, which
// is only ever written through the /status subresource.
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { API_VERSION, KIND, type EditorServerSpec, type EditorServerStatus } from '../manifests/types.ts';
import type { ListWatchTransport } from '../runtime/kubernetes/list-watch.ts';
import { messageOf, statusOf, type KubeClient } from '../runtime/kubernetes/client.ts';

export const GROUP = 'devbox.dev';
export const VERSION = 'v1alpha1';
export const PLURAL = 'editorservers';
/** Kept on every object the controller manages: a delete waits until the server's editor, volume and objects are gone. */
export const FINALIZER = 'devbox.dev/cleanup';
/** kubectl apply's record of the last applied file: kept on the object, never shown in the manifest the controller reads. */
export const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** An EditorServer as the API server keeps it. Everything in it is untrusted: anyone with access to the namespace wrote it. */
export interface EditorServerObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    generation?: number;
    resourceVersion?: string;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    finalizers?: string[];
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
  };
  spec?: EditorServerSpec;
  status?: EditorServerStatus;
}

/** A call the API server refused; `status` is its HTTP status (404 gone, 409 conflict, 422 invalid). */
export class ApiRefusal extends Error {
  readonly status: number | undefined;
  constructor(what: string, error: unknown) {
    super(`${what}: ${messageOf(error)}`);
    this.status = statusOf(error);
  }
}

/** What the cluster's manifests need of the API server (EditorServerApi; an in-memory one in tests). */
export interface EditorServers {
  readonly namespace: string;
  describe(name: string): string;
  get(name: string): Promise<EditorServerObject | undefined>;
  create(object: EditorServerObject): Promise<EditorServerObject | undefined>;
  replace(object: EditorServerObject): Promise<EditorServerObject>;
  delete(name: string, uid?: string): Promise<boolean>;
  setStatus(name: string, status: EditorServerStatus): Promise<EditorServerObject>;
  transport(): ListWatchTransport<EditorServerObject>;
}

export class EditorServerApi implements EditorServers {
  readonly namespace: string;
  readonly #client: KubeClient;
  readonly #api: CustomObjectsApi;

  /** Over the client's cluster and namespace. */
  constructor(client: KubeClient) {
    this.#client = client;
    this.namespace = client.namespace;
    this.#api = client.config.makeApiClient(CustomObjectsApi);
  }

  /** Where the objects are, for messages: editorservers/<name> in <namespace>. */
  describe(name: string): string {
    return `editorserver/${name} in namespace ${this.namespace}`;
  }

  async get(name: string): Promise<EditorServerObject | undefined> {
    try {
      return (await this.#api.getNamespacedCustomObject(this.#at(name))) as EditorServerObject;
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw new ApiRefusal(`reading ${this.describe(name)}`, error);
    }
  }

  /** Creates the object; undefined when one of that name exists already. */
  async create(object: EditorServerObject): Promise<EditorServerObject | undefined> {
    const body = { ...object, apiVersion: API_VERSION, kind: KIND, metadata: { ...object.metadata, namespace: this.namespace } };
    try {
      return (await this.#api.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: this.namespace, plural: PLURAL, body })) as EditorServerObject;
    } catch (error) {
      if (statusOf(error) === 409) return undefined;
      throw new ApiRefusal(`creating ${this.describe(object.metadata.name)}`, error);
    }
  }

  /** Replaces metadata and spec, only if the object is still at `object.metadata.resourceVersion` (else ApiRefusal 409). */
  async replace(object: EditorServerObject): Promise<EditorServerObject> {
    try {
      return (await this.#api.replaceNamespacedCustomObject({ ...this.#at(object.metadata.name), body: object })) as EditorServerObject;
    } catch (error) {
      throw new ApiRefusal(`updating ${this.describe(object.metadata.name)}`, error);
    }
  }

  /** Asks for the object's deletion (its finalizers hold it until they are removed); false when there was none. */
  async delete(name: string, uid?: string): Promise<boolean> {
    try {
      await this.#api.deleteNamespacedCustomObject({ ...this.#at(name), body: uid ? { preconditions: { uid } } : {} });
      return true;
    } catch (error) {
      if (statusOf(error) === 404 || statusOf(error) === 409) return false;
      throw new ApiRefusal(`deleting ${this.describe(name)}`, error);
    }
  }

  /** Writes the whole status through the status subresource (nothing else of the object changes). */
  async setStatus(name: string, status: EditorServerStatus): Promise<EditorServerObject> {
    try {
      return (await this.#api.patchNamespacedCustomObjectStatus(
        { ...this.#at(name), body: [{ op: 'add', path: '/status', value: status }] },
        setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
      )) as EditorServerObject;
    } catch (error) {
      throw new ApiRefusal(`writing the status of ${this.describe(name)}`, error);
    }
  }

  /** The objects of the namespace, for the list-then-watch loop. */
  transport(): ListWatchTransport<EditorServerObject> {
    const path = `/apis/${GROUP}/${VERSION}/namespaces/${this.namespace}/${PLURAL}`;
    return this.#client.transport(API_VERSION, KIND, path, '') as unknown as ListWatchTransport<EditorServerObject>;
  }

  #at(name: string) {
    return { group: GROUP, version: VERSION, namespace: this.namespace, plural: PLURAL, name };
  }
}
