// One server through three doors, on the real test cluster in CRD mode: created with `kubectl
// apply`, started through the REST API, stopped from the dashboard in real Chromium, deleted with
// `kubectl delete`. At every step the object (kubectl's view), the API and the open page (never
// reloaded) agree, and the editor's Pod is there or gone as they say.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeBrowser, launchBrowser, withCleanPage } from '../helpers/browser.ts';
import { kubectl, NO_CLUSTER, testCluster } from '../helpers/cluster.ts';
import { closeClusterService, editorPod, objectsOf, readyPod, startClusterService } from '../helpers/cluster-service.ts';
import { editorServer, installCrd, releaseEditorServers } from '../helpers/crd.ts';
import { clickAndAwait, ensureWebBuilt, menuItem, rowOf, statusShows, UI_WAIT } from '../helpers/dashboard-page.ts';
import { stubEditor, testNamespace } from '../helpers/kube-runtime.ts';
import { eventually, type TestService } from '../helpers/service.ts';

const cluster = await testCluster();
if (!cluster) console.log(NO_CLUSTER);

/** A stop waits out the Pod's deletion (~10 s on 1.20). */
const POD_WAIT_MS = 90_000;

let namespace: { name: string; remove(): Promise<void> };
let ns: string;
let service: TestService;
let browser: Browser;

beforeAll(async () => {
  if (!cluster) return;
  ensureWebBuilt();
  await installCrd(cluster);
  namespace = await testNamespace(cluster, 'devbox-doors');
  ns = namespace.name;
  service = await startClusterService(cluster, ns, stubEditor(), { kubernetes: { source: 'crd' } });
  browser = await launchBrowser();
}, 120_000);
afterAll(async () => {
  await closeBrowser(browser);
  if (service) await closeClusterService(service);
  if (cluster && ns) await releaseEditorServers(cluster, ns);
  await namespace?.remove();
}, 120_000);

/** The object's phase and wish, as `kubectl get` shows them. */
async function objectSays(): Promise<{ running: boolean; phase: string | undefined; generation: number; observed: number | undefined } | undefined> {
  const object = await editorServer(cluster!, ns, 'doors');
  return object && { running: object.spec.running, phase: object.status?.phase, generation: object.metadata.generation, observed: object.status?.observedGeneration };
}

async function apiSays(id: string): Promise<any> {
  return (await service.request('GET', `/servers/${id}`)).body;
}

describe.skipIf(!cluster)(cluster ? 'one server, three doors' : `one server, three doors (${NO_CLUSTER})`, { timeout: 300_000 }, () => {
  it('is created with kubectl, started through the API, stopped from the dashboard and deleted with kubectl, every view agreeing at each step', async () => {
    await withCleanPage(browser, service.url, 'three-doors', UI_WAIT, async ({ page }) => {
      await page.goto(`${service.url}/`);
      await page.evaluate(() => ((globalThis as unknown as { __sameDocument: boolean }).__sameDocument = true));

      // 1. kubectl apply: the object, the API and the page show a stopped server.
      await kubectl(cluster!, ['apply', '-n', ns, '-f', '-'], [
        'apiVersion: devbox.dev/v1alpha1', 'kind: EditorServer', 'metadata: { name: doors }', 'spec: { displayName: Three doors, running: false }',
      ].join('\n'));
      const object = await eventually(async () => {
        const said = await objectSays();
        return said?.phase === 'Stopped' && said.observed === said.generation ? said : undefined;
      }, POD_WAIT_MS);
      expect(object.running).toBe(false);
      const id = (await editorServer(cluster!, ns, 'doors')).metadata.uid;
      expect((await apiSays(id)).status).toBe('stopped');
      await statusShows(page, 'Three doors', 'stopped');

      // 2. The REST API starts it: the object asks to run and says Running; the page follows.
      const started = await service.request('POST', `/servers/${id}/start`);
      expect(started.status, JSON.stringify(started.body)).toBe(200);
      expect((await apiSays(id)).status).toBe('running');
      await eventually(async () => {
        const said = await objectSays();
        return said?.running && said.phase === 'Running' && said.observed === said.generation ? said : undefined;
      }, POD_WAIT_MS);
      // The kubelet's readiness probe (every 2 s) follows the controller's own health check.
      await eventually(() => readyPod(cluster!, ns, 'doors'), 30_000);
      await statusShows(page, 'Three doors', 'running', undefined, POD_WAIT_MS);

      // 3. The dashboard stops it: the API and the object agree, and the Pod goes.
      const answer = await clickAndAwait(page, await menuItem(page, 'Three doors', 'Stop'), 'POST', new RegExp(`/servers/${id}/stop$`));
      expect(answer.status()).toBe(200);
      await statusShows(page, 'Three doors', 'stopped', undefined, POD_WAIT_MS);
      expect((await apiSays(id)).status).toBe('stopped');
      await eventually(async () => {
        const said = await objectSays();
        return !said?.running && said?.phase === 'Stopped' && said.observed === said.generation ? said : undefined;
      }, POD_WAIT_MS);
      await eventually(async () => ((await editorPod(cluster!, ns, 'doors')) === undefined ? true : undefined), POD_WAIT_MS);

      // 4. kubectl delete: the row leaves the open page, the API forgets it, nothing of it is left.
      await kubectl(cluster!, ['delete', 'editorserver', 'doors', '-n', ns, '--wait=false']);
      await rowOf(page, 'Three doors').waitFor({ state: 'detached', timeout: POD_WAIT_MS });
      expect((await service.request('GET', `/servers/${id}`)).status).toBe(404);
      await eventually(async () => ((await editorServer(cluster!, ns, 'doors')) === undefined ? true : undefined), POD_WAIT_MS);
      await eventually(async () => ((await objectsOf(cluster!, ns, 'doors')).length === 0 ? true : undefined), POD_WAIT_MS);
      // The page followed every step live: it was never reloaded.
      expect(await page.evaluate(() => (globalThis as unknown as { __sameDocument?: boolean }).__sameDocument)).toBe(true);
    });
  });
});
