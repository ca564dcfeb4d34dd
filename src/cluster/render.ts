// EditorServer objects as manifest files and back. An object read as a manifest is the manifest
// a person could have written: name, uid, annotations, labels, a deletion mark and the spec. What
// only the API server needs (resourceVersion, finalizers, kubectl's last-applied record) stays on
// the object, so the controller reads exactly what it reads from a file, with the same rules.
import { stringify } from 'yaml';
import { sameData } from '../core/equal.ts';
import { SCHEMA_MODELINE } from '../manifests/schema.ts';
import { API_VERSION, KIND, type EditorServer, type EditorServerMetadata } from '../manifests/types.ts';
import { FINALIZER, LAST_APPLIED, type EditorServerObject } from './editor-servers.ts';

/** The manifest an object stands for; with `withStatus`, its status too (a first sight, to be taken over once). */
export function manifestOf(object: EditorServerObject, withStatus = false): Record<string, unknown> {
  const { name, uid, annotations, labels, deletionTimestamp } = object.metadata;
  const shown = withoutLastApplied(annotations);
  const metadata = {
    name,
    ...(uid ? { uid } : {}),
    ...(shown ? { annotations: shown } : {}),
    ...(labels && Object.keys(labels).length > 0 ? { labels } : {}),
    ...(deletionTimestamp ? { deletionTimestamp } : {}),
  };
  // The object's own words, kept as they are (valid or not): the controller validates the copy as it validates any file.
  const body: Record<string, unknown> = { apiVersion: object.apiVersion ?? API_VERSION, kind: object.kind ?? KIND, metadata, spec: object.spec ?? null };
  if (withStatus && object.status !== undefined) body.status = object.status;
  return body;
}

/** The object as a manifest's text. */
export function manifestText(object: EditorServerObject, withStatus = false): string {
  return `${SCHEMA_MODELINE}\n${stringify(manifestOf(object, withStatus), { lineWidth: 0 })}`;
}

/** True when the manifest says what the object says, status aside. */
export function sameManifest(object: EditorServerObject, manifest: unknown): boolean {
  const copy = manifest as Partial<EditorServer> | undefined;
  if (!copy || typeof copy !== 'object') return false;
  const { status: _ignored, ...rest } = copy;
  return sameData(manifestOf(object), { ...rest, metadata: { ...copy.metadata } });
}

/**
 * The object to create for a manifest the API or a GitOps repository wrote: its metadata and spec,
 * with the controller's finalizer. A uid is the API server's to give; a status is the controller's to write.
 */
export function objectFor(server: EditorServer): EditorServerObject {
  const { name, annotations, labels } = server.metadata;
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name, finalizers: [FINALIZER], ...(annotations ? { annotations } : {}), ...(labels ? { labels } : {}) },
    spec: server.spec,
  };
}

/**
 * The object with a manifest's metadata and spec laid over it, for a replace: its version (so a
 * change made meanwhile is not overwritten), finalizers and kubectl's record are kept.
 */
export function objectUpdated(object: EditorServerObject, server: EditorServer): EditorServerObject {
  const metadata: EditorServerMetadata = server.metadata;
  const lastApplied = object.metadata.annotations?.[LAST_APPLIED];
  const annotations = { ...metadata.annotations, ...(lastApplied !== undefined ? { [LAST_APPLIED]: lastApplied } : {}) };
  const { annotations: _a, labels: _l, ...kept } = object.metadata;
  return {
    apiVersion: object.apiVersion ?? API_VERSION,
    kind: object.kind ?? KIND,
    metadata: {
      ...kept,
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
      ...(metadata.labels ? { labels: metadata.labels } : {}),
    },
    spec: server.spec,
  };
}

function withoutLastApplied(annotations: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!annotations) return undefined;
  const { [LAST_APPLIED]: _dropped, ...rest } = annotations;
  return Object.keys(rest).length > 0 ? rest : undefined;
}
