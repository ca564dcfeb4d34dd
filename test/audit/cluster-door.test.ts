// The cluster's door: with the EditorServer objects as the manifests (over an in-memory API
// server), a change someone else makes to an object (kubectl edit, apply, delete) becomes an entry
// of door `cluster` naming the spec fields changed, and the service's own writes (the API's
// changes, status, finalizers) do not.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuditInput } from '../../src/audit/entry.ts';
import { auditManifestWatch, ManifestRecorder } from '../../src/audit/manifest-recorder.ts';
import { ClusterManifestStore } from '../../src/cluster/cluster-store.ts';
import type { ServerIndex } from '../../src/index/server-index.ts';
import type { EditorServer } from '../../src/manifests/types.ts';
import { FakeEditorServers } from '../cluster/fake-editor-servers.ts';
import { eventually } from '../helpers/wait.ts';

let root: string;
let store: ClusterManifestStore;

beforeEach(async () => {
  root = await fs.mkdtemp(join(tmpdir(), 'devbox-audit-cluster-'));
});
afterEach(async () => {
  await store?.close();
  await fs.rm(root, { recursive: true, force: true });
});

const object = (name: string, spec: Record<string, unknown>) =>
  ({ apiVersion: 'devbox.dev/v1alpha1', kind: 'EditorServer', metadata: { name }, spec }) as unknown as EditorServer;

describe('changes of the cluster\'s objects', () => {
  it('records an object edited or deleted by someone else, and none of the service\'s own writes', async () => {
    const api = new FakeEditorServers();
    await api.create(object('shared', { displayName: 'Shared', running: false }));
    store = new ClusterManifestStore({ dir: join(root, 'copy'), statusDir: join(root, 'status'), api, log: () => undefined });
    await store.start();
    // What the controller last read of each server, as the index serves it.
    const known = new Map<string, EditorServer>();
    const index = { serverNamed: (name: string) => known.get(name) } as unknown as ServerIndex;
    const entries: AuditInput[] = [];
    auditManifestWatch(store, new ManifestRecorder({ index, textOf: (name) => store.textOf(name), door: 'cluster', record: (e) => entries.push(e), log: () => undefined }));
    const look = async (name: string) => {
      const read = await store.read(name);
      if (read.kind === 'ok') known.set(name, read.server);
      else if (read.kind === 'missing') known.delete(name);
    };
    await store.watch({ changed: (name) => void look(name), everything: () => undefined, known: () => known.keys() }, () => undefined);
    await look('shared');
    await store.settled();

    // The service's own write (an API start) is no one else's change.
    await store.update('shared', (doc) => { doc.setIn(['spec', 'running'], true); });
    await store.settled();
    await look('shared');
    // Someone else edits the object.
    api.touch('shared', (o) => ({ ...o, spec: { ...o.spec!, running: false, extensions: ['acme.csv'] } }));
    await store.settled();
    await eventually(() => entries.length > 0);
    expect(entries).toEqual([{
      actor: 'cluster', door: 'cluster', action: 'edit', outcome: 'ok', server_id: api.objects.get('shared')!.metadata.uid, server_name: 'shared',
      detail: 'spec: extensions; running: true → false',
    }]);
    await eventually(() => known.get('shared')?.spec.running === false);

    // kubectl delete: the object goes (its finalizer taken off by hand here, as the controller would).
    api.touch('shared', (o) => ({ ...o, metadata: { ...o.metadata, finalizers: [] } }));
    await store.settled();
    await api.delete('shared');
    await eventually(() => entries.length === 2);
    expect(entries[1]).toMatchObject({ door: 'cluster', action: 'delete', server_name: 'shared', outcome: 'ok' });
  });
});
