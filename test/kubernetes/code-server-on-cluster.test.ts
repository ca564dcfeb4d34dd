// The real code-server as a Pod of the test cluster (from the host's cache, in the busybox
// image), opened through the service's proxy: its workbench page, and a WebSocket to the editor
// in the Pod that speaks VS Code's remote protocol back.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { NO_CLUSTER, testCluster } from '../helpers/cluster.ts';
import { closeClusterService, readyPod, startClusterService } from '../helpers/cluster-service.ts';
import { realEditor, testNamespace } from '../helpers/kube-runtime.ts';
import { opened } from '../helpers/net.ts';
import { eventually, type TestService } from '../helpers/service.ts';

const cluster = await testCluster();
if (!cluster) console.log(NO_CLUSTER);
const editor = realEditor();
const NO_EDITOR = 'there is no code-server in the cache (npm install puts it there: scripts/install-editor.mjs), so the real editor is not run on the cluster';
if (cluster && !editor) console.log(NO_EDITOR);

let namespace: { name: string; remove(): Promise<void> };
let service: TestService;

beforeAll(async () => {
  if (!cluster || !editor) return;
  namespace = await testNamespace(cluster, 'devbox-e2e-code');
  service = await startClusterService(cluster, namespace.name, editor);
});
afterAll(async () => {
  if (service) await closeClusterService(service);
  await namespace?.remove();
});

/** A control message of VS Code's PersistentProtocol: type 2, id and ack 0, the length, then JSON. */
function controlMessage(body: object): Buffer {
  const data = Buffer.from(JSON.stringify(body));
  const header = Buffer.alloc(13);
  header.writeUInt8(2, 0);
  header.writeUInt32BE(data.length, 9);
  return Buffer.concat([header, data]);
}

/** The control messages in what the editor sent, as JSON. */
function controlMessagesIn(bytes: Buffer): any[] {
  const found: any[] = [];
  for (let at = 0; at + 13 <= bytes.length;) {
    const length = bytes.readUInt32BE(at + 9);
    if (at + 13 + length > bytes.length) break;
    if (bytes.readUInt8(at) === 2) found.push(JSON.parse(bytes.subarray(at + 13, at + 13 + length).toString('utf8')));
    at += 13 + length;
  }
  return found;
}

const title = !cluster ? `code-server on the test cluster (${NO_CLUSTER})` : !editor ? `code-server on the test cluster (${NO_EDITOR})` : 'code-server on the test cluster';

describe.skipIf(!cluster || !editor)(title, { timeout: 120_000 }, () => {
  it('serves its workbench through /vscode/{port}/ and answers VS Code\'s handshake on a WebSocket through the proxy', async () => {
    const { id, port } = (await service.request('POST', '/servers', { name: 'Real editor', extensions: [] })).body;
    const started = await service.request('POST', `/servers/${id}/start`);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(started.body.data).toEqual({ id, status: 'running', pid: null });
    const pod = await eventually(() => readyPod(cluster!, namespace.name, 'real-editor'), 60_000, 250);
    expect(pod.spec.containers[0].command).toContain(editor!.command.at(-1));

    // code-server sends the browser to its workspace, relative to where the proxy serves it...
    const entry = await fetch(`${service.url}/vscode/${port}/`, { redirect: 'manual' });
    expect(entry.status).toBe(302);
    expect(entry.headers.get('location')).toBe('./?folder=/data/workspace');
    await entry.body?.cancel();
    // ...where the workbench is: its configuration names the editor's data on the Pod's volume.
    const page = await fetch(`${service.url}/vscode/${port}/?folder=/data/workspace`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<meta id="vscode-workbench-web-configuration"');
    expect(html).toContain('&quot;userDataPath&quot;:&quot;/data/editor/data&quot;');
    expect(html).toMatch(/static\/out\/vs\/code\/browser\/workbench\/workbench\.css/);

    // The workbench's own socket: the editor answers the client's auth with its "sign" message.
    const socket = new WebSocket(`${service.url.replace('http', 'ws')}/vscode/${port}/?reconnectionToken=${randomUUID()}&reconnection=false&skipWebSocketFrames=false`);
    const received: Buffer[] = [];
    socket.on('message', (data: Buffer) => received.push(data));
    await opened(socket);
    try {
      socket.send(controlMessage({ type: 'auth', auth: '00000000000000000000', data: 'devbox-e2e' }));
      const sign = await eventually(() => controlMessagesIn(Buffer.concat(received)).find((m) => m.type === 'sign'), 20_000, 100);
      expect(sign).toEqual({ type: 'sign', data: expect.any(String), signedData: expect.any(String) });
    } finally {
      socket.close();
    }
  });
});
