// The proxy goes where the runtime says the editor answers (its endpoint), not to an address of
// its own: a second runtime (pods) gives other hosts.
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { opened } from '../helpers/net.ts';
import { request, startService, startTarget, type Service, type Target } from './fixtures.ts';

describe('the editor endpoint', () => {
  let target: Target;
  let service: Service;

  afterEach(async () => {
    await service?.close();
    await target?.close();
  });

  it('is where requests and WebSockets go, whatever its host', async () => {
    // 127.0.0.2 is loopback too on Linux, but not the address the proxy used to assume.
    target = await startTarget('127.0.0.2');
    service = await startService(() => false, {
      route: (port) => (port === target.port ? { host: '127.0.0.2', port } : undefined),
    });
    const page = await request(`${service.base}/vscode/${target.port}/index.html`);
    expect(page.status).toBe(200);
    expect(JSON.parse(page.text).url).toBe('/index.html');

    const ws = new WebSocket(`${service.base.replace('http', 'ws')}/vscode/${target.port}/socket`);
    await opened(ws);
    const echo = new Promise<string>((resolve) => ws.once('message', (data) => resolve(String(data))));
    ws.send('hi');
    expect(await echo).toBe('echo /socket: hi');
    ws.close();
    expect(target.hits).toBe(2);
  });
});
