// The whole path of a forwarded port, as a repository sets it up: an uploaded ZIP whose
// devcontainer.json declares a port with its label and starts the project's own server in
// postStartCommand; the server's page answers through the service's proxy under the editor's
// address, the port is listed as declared and listening, and it goes with the editor.
import { freePort } from '../helpers/net.ts';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { postForm } from '../helpers/form.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';
import { buildZip } from '../workspace/zip-fixtures.ts';

let service: TestService;

beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service?.stop();
});

it("reaches the program a lifecycle command started, on the port devcontainer.json declares, until the editor stops", async () => {
  const port = await freePort();
  const site = `require('node:http').createServer((req, res) => res.end('site of ' + process.env.DEVBOX_SERVER_NAME + ' at ' + req.url)).listen(${port}, '127.0.0.1');\n`;
  const zip = buildZip([
    { name: 'serve.js', data: site },
    {
      name: '.devcontainer/devcontainer.json',
      data: JSON.stringify({
        forwardPorts: [port],
        portsAttributes: { [port]: { label: 'Site', onAutoForward: 'openPreview' } },
        // In the background, as a development server is: the step ends, the server keeps running.
        postStartCommand: `"${process.execPath}" serve.js > serve.log 2>&1 &`,
      }),
    },
  ]);
  const created = await postForm(`${service.url}/servers/create-with-workspace`, { name: 'Site', extensions: '[]' }, zip);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const { id, port: editorPort } = created.body;
  expect((await service.request('POST', `/servers/${id}/start`)).status).toBe(200);

  const url = `/vscode/${editorPort}/proxy/${port}/`;
  const page = await eventually(async () => {
    const res = await fetch(`${service.url}${url}docs?x=1`);
    return res.status === 200 && res.text();
  }, 30_000, 100);
  expect(page).toBe('site of site at /docs?x=1');
  const listed = (await service.request('GET', `/servers/${id}/ports`)).body;
  expect(listed).toEqual([{ port, label: 'Site', protocol: 'http', onAutoForward: 'openPreview', declared: true, listening: true, url }]);
  // The command itself ended at once (its server went to the background) and succeeded.
  await eventually(async () => (await service.request('GET', `/servers/${id}`)).body.devcontainer?.lifecycle?.postStartCommand?.state === 'Succeeded', 10_000, 100);

  // The program was the editor's: it stops with it, and the port answers that nothing listens.
  expect((await service.request('POST', `/servers/${id}/stop`)).status).toBe(200);
  const gone = await eventually(async () => {
    const res = await fetch(`${service.url}${url}`);
    return res.status !== 200 && res;
  }, 30_000, 100);
  expect(gone.status).toBeGreaterThanOrEqual(400);
}, 90_000);
