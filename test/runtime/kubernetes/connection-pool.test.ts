// The Kubernetes client's calls share connections: against a real HTTPS server (a certificate
// made for the test, trusted through the kubeconfig as an API server's is), many calls make a
// handshake or two, not one each, and new credentials make new connections.
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { KubeClient } from '../../../src/runtime/kubernetes/client.ts';

let dir: string;
let server: Server;
let handshakes: number;
let requests: number;

function kubeconfig(port: number, ca: string, token: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'test', cluster: { server: `https://127.0.0.1:${port}`, 'certificate-authority-data': Buffer.from(ca).toString('base64') } }],
    users: [{ name: 'someone', user: { token } }],
    contexts: [{ name: 'test', context: { cluster: 'test', user: 'someone' } }],
    'current-context': 'test',
  });
}

beforeEach(async () => {
  dir = await fs.mkdtemp(join(tmpdir(), 'devbox-pool-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
  handshakes = 0;
  requests = 0;
  server = createServer({ key: await fs.readFile(join(dir, 'key.pem')), cert: await fs.readFile(join(dir, 'cert.pem')) }, (req, res) => {
    requests++;
    res.setHeader('content-type', 'application/json');
    res.end('{"pods":[]}');
  });
  server.on('secureConnection', () => handshakes++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await fs.rm(dir, { recursive: true, force: true });
});

it('shares a connection or two among many calls to the API server, and makes new ones when the credentials change', async () => {
  const { port } = server.address() as AddressInfo;
  const ca = await fs.readFile(join(dir, 'cert.pem'), 'utf8');
  const file = join(dir, 'kubeconfig');
  await fs.writeFile(file, kubeconfig(port, ca, 'first'));
  const client = new KubeClient('default', file);
  for (let i = 0; i < 20; i++) expect(await client.nodeSummary('node-1')).toEqual({ pods: [] });
  expect(requests).toBe(20);
  // The pool's connections (a call can begin before the last one's connection is handed back), not one per call.
  expect(handshakes).toBeLessThanOrEqual(2);

  // Another CA bundle for the same cluster (a rotation): new connections, then reused again.
  const before = handshakes;
  client.config.clusters[0] = { ...client.config.clusters[0], caData: Buffer.from(`${ca}\n`).toString('base64') };
  for (let i = 0; i < 20; i++) await client.nodeSummary('node-1');
  expect(requests).toBe(40);
  expect(handshakes - before).toBeGreaterThanOrEqual(1);
  expect(handshakes - before).toBeLessThanOrEqual(2);
});
