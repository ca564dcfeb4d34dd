// The EditorServer CRD (deploy/kubernetes/crd.yaml) on the real test cluster (Kubernetes 1.20):
// the API server takes it, accepts the example manifests, lists them with their columns, and
// refuses what the schema refuses, naming the field. Nothing here runs the controller.
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { NO_CLUSTER, getObject, kubectl, testCluster } from '../helpers/cluster.ts';

const PROJECT = resolve(import.meta.dirname, '../..');
const CRD_FILE = join(PROJECT, 'deploy/kubernetes/crd.yaml');
const EXAMPLES = join(PROJECT, 'manifests/examples');
const API = '/apis/devbox.dev/v1alpha1';

const cluster = await testCluster();

describe.skipIf(!cluster)(cluster ? 'the EditorServer CRD on the test cluster' : `the EditorServer CRD (${NO_CLUSTER})`, () => {
  const c = cluster!;
  const namespace = `devbox-crd-${randomBytes(3).toString('hex')}`;

  /** A manifest as JSON for `kubectl -f -`: the smallest valid one, with `spec` laid over. */
  const manifest = (name: string, spec: object = {}, extra: object = {}) =>
    JSON.stringify({ apiVersion: 'devbox.dev/v1alpha1', kind: 'EditorServer', metadata: { name }, spec: { running: true, ...spec }, ...extra });
  const apply = (text: string, ...flags: string[]) => kubectl(c, ['apply', '-n', namespace, ...flags, '-f', '-'], text);
  const get = (name: string) => getObject(c, ['editorserver', name, '-n', namespace]);

  /** What kubectl printed when it refused, failing the test when it did not refuse. */
  async function refusal(run: Promise<string>): Promise<string> {
    const error = await run.then(() => undefined, (e: { stderr?: string; message: string }) => e);
    expect(error, 'kubectl refused').toBeDefined();
    return error!.stderr || error!.message;
  }

  beforeAll(async () => {
    await kubectl(c, ['apply', '-f', CRD_FILE]);
    await kubectl(c, ['wait', '--for=condition=Established', 'crd/editorservers.devbox.dev', '--timeout=60s']);
    await kubectl(c, ['create', 'namespace', namespace]);
  });
  afterAll(async () => {
    // The CRD stays: it is cluster-wide, and deleting it would delete every EditorServer of
    // other tests sharing the cluster. Everything this file made is in its namespace.
    if (cluster) await kubectl(c, ['delete', 'namespace', namespace, '--wait=false']).catch(() => undefined);
  });

  it('accepts every example manifest, keeping its spec whole (settings included)', async () => {
    const files = (await readdir(EXAMPLES)).filter((f) => f.endsWith('.yaml')).sort();
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const text = await readFile(join(EXAMPLES, file), 'utf8');
      expect(await kubectl(c, ['apply', '-n', namespace, '-f', join(EXAMPLES, file)])).toMatch(/created|configured|unchanged/);
      const example = parse(text);
      // Nothing pruned: a field the schema lacks would vanish here, as spec.settings would
      // without x-kubernetes-preserve-unknown-fields.
      expect((await get(example.metadata.name))?.spec, file).toEqual(example.spec);
    }
  });

  it('lists editor servers by plural and by short name with the columns Phase, Port, Owner and Age', async () => {
    await apply(manifest('shown', {}, { metadata: { name: 'shown', annotations: { 'devbox.dev/owner': 'ada@example.com' } } }));
    // Status is written only through the /status subresource, as the controller does.
    const object = await get('shown');
    await kubectl(c, ['replace', '--raw', `${API}/namespaces/${namespace}/editorservers/shown/status`, '-f', '-'],
      JSON.stringify({ ...object, status: { phase: 'Running', port: 8123 } }));
    for (const resource of ['editorservers', 'eds']) {
      const [header, ...rows] = (await kubectl(c, ['get', resource, '-n', namespace])).split('\n');
      expect(header.trim().split(/\s+/), resource).toEqual(['NAME', 'PHASE', 'PORT', 'OWNER', 'AGE']);
      const shown = rows.find((row) => row.startsWith('shown '))!.trim().split(/\s+/);
      expect(shown.slice(0, 4), resource).toEqual(['shown', 'Running', '8123', 'ada@example.com']);
      expect(shown[4], resource).toMatch(/^\d+s$/);
    }
  });

  it('refuses a port outside 1024-65535, naming spec.port', async () => {
    expect(await refusal(apply(manifest('low-port', { port: 80 })))).toMatch(/spec\.port: Invalid value: 80: .*greater than or equal to 1024/);
    expect(await refusal(apply(manifest('high-port', { port: 70000 })))).toMatch(/spec\.port: Invalid value: 70000: .*less than or equal to 65535/);
    expect(await get('low-port')).toBeUndefined();
    expect(await get('high-port')).toBeUndefined();
  });

  it('refuses a value of the wrong type, naming the field, in kubectl and in the API server', async () => {
    const text = manifest('yes-running', { running: 'yes' });
    // kubectl checks types against the OpenAPI the CRD publishes, before sending anything...
    expect(await refusal(apply(text))).toMatch(/ValidationError\(EditorServer\.spec\.running\): invalid type .* got "string", expected "boolean"/);
    // ...and the API server refuses it itself when kubectl does not check.
    expect(await refusal(apply(text, '--validate=false'))).toMatch(/spec\.running: Invalid value: "string": spec\.running in body must be of type boolean/);
    expect(await get('yes-running')).toBeUndefined();
  });

  it('refuses an unknown field in kubectl; the 1.20 API server itself drops it', async () => {
    const text = manifest('coloured', { colour: 'blue' });
    expect(await refusal(apply(text))).toMatch(/unknown field "colour" in dev\.devbox\.v1alpha1\.EditorServer\.spec/);
    expect(await get('coloured')).toBeUndefined();
    // A structural schema may not say additionalProperties: false beside properties, so the API
    // server does not refuse unknown fields: it prunes them (from 1.25 server-side field
    // validation refuses them on request, and kubectl asks for that). Sent raw, as any client
    // can, the object is created without the field.
    const created = JSON.parse(await kubectl(c, ['create', '--raw', `${API}/namespaces/${namespace}/editorservers`, '-f', '-'], text));
    expect(created.metadata.name).toBe('coloured');
    expect(created.spec).toEqual({ running: true });
    expect((await get('coloured'))?.spec).toEqual({ running: true });
  });

  it('refuses the same extension twice, naming the item', async () => {
    expect(await refusal(apply(manifest('twice', { extensions: ['redhat.vscode-yaml', 'redhat.vscode-yaml'] }))))
      .toMatch(/spec\.extensions\[1\]: Duplicate value: "redhat\.vscode-yaml"/);
  });

  it('refuses a name that is not a DNS label, which Kubernetes alone would take', async () => {
    expect(await refusal(apply(manifest('my.server')))).toMatch(/metadata\.name: Invalid value: "my\.server": .*should match/);
    expect(await refusal(apply(manifest('a'.repeat(64))))).toMatch(/metadata\.name: Invalid value: .*should be at most 63 chars long/);
  });

  it('ignores a status block in an applied manifest: status belongs to the /status subresource', async () => {
    await apply(manifest('forged', {}, { status: { phase: 'Running', port: 9999 } }));
    expect((await get('forged'))?.status).toBeUndefined();
    // Once status is set through /status, applying a different one leaves it as it was.
    const object = await get('forged');
    await kubectl(c, ['replace', '--raw', `${API}/namespaces/${namespace}/editorservers/forged/status`, '-f', '-'],
      JSON.stringify({ ...object, status: { phase: 'Stopped' } }));
    await apply(manifest('forged', { displayName: 'Forged' }, { status: { phase: 'Running', port: 9999 } }));
    const after = await get('forged');
    expect(after?.spec.displayName).toBe('Forged');
    expect(after?.status).toEqual({ phase: 'Stopped' });
  });
});
