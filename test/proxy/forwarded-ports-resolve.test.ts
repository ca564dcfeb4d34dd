// Where a forwarded port's path goes, decided before any byte is sent: to the port on the editor's
// host (a Pod's address on a cluster, both loopbacks on one machine), with the path code-server's
// port proxy would give; or refused, saying why, without asking who listens when the port is the
// editor's own.
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../src/core/errors.ts';
import { ForwardedPorts, LOOPBACKS, type PortListener } from '../../src/proxy/forwarded-ports.ts';
import type { Route } from '../../src/proxy/route.ts';

const podRoute = (path: string): Route => ({ prefix: '/vscode/8012', port: 8012, target: { host: '10.1.2.3', port: 8080 }, path, search: '?a=1' });

function ports(answer: PortListener | Error = 'this') {
  const asked: Array<[number, number]> = [];
  const forwarded = new ForwardedPorts({
    listenerOf: async (editorPort, port) => {
      asked.push([editorPort, port]);
      if (answer instanceof Error) throw answer;
      return answer;
    },
  });
  return { forwarded, asked };
}

describe('ForwardedPorts.resolve', () => {
  it('sends /proxy/{p}/… to the port on the editor\'s host, the prefix up to the port stripped', async () => {
    const { forwarded, asked } = ports();
    expect(await forwarded.resolve(podRoute('/proxy/3000/api/items'))).toEqual({
      prefix: '/vscode/8012/proxy/3000', port: 8012, forwarded: 3000, target: { host: '10.1.2.3', port: 3000 }, path: '/api/items', search: '?a=1',
    });
    expect(asked).toEqual([[8012, 3000]]);
  });

  it('sends /absproxy/{p}/… with the whole path, and nothing to strip from its redirects', async () => {
    const resolved = await ports().forwarded.resolve(podRoute('/absproxy/3000/app/'));
    expect(resolved).toMatchObject({ prefix: '', path: '/vscode/8012/absproxy/3000/app/', target: { port: 3000 } });
  });

  it('takes the paths in any case, as code-server\'s router would', async () => {
    expect(await ports().forwarded.resolve(podRoute('/AbsProxy/3000/x'))).toMatchObject({ prefix: '', path: '/vscode/8012/AbsProxy/3000/x', target: { port: 3000 } });
    expect(await ports().forwarded.resolve(podRoute('/PROXY/3000/x'))).toMatchObject({ prefix: '/vscode/8012/proxy/3000', path: '/x' });
  });

  it('reaches an editor\'s ports on 127.0.0.1 at both loopbacks', async () => {
    const route: Route = { prefix: '/editor/8012', port: 8012, target: { host: '127.0.0.1', port: 8012 }, path: '/proxy/5173/', search: '' };
    expect(await ports().forwarded.resolve(route)).toMatchObject({ target: { host: LOOPBACKS, port: 5173 } });
  });

  it('refuses the editor\'s route number and its own port without asking who listens', async () => {
    const { forwarded, asked } = ports();
    for (const port of [8012, 8080]) {
      const refused = await forwarded.resolve(podRoute(`/proxy/${port}/`));
      expect(refused).toBeInstanceOf(HttpError);
      expect(refused).toMatchObject({ status: 403, code: 'PORT_NOT_FORWARDED' });
      expect((refused as HttpError).message).toContain('the editor\'s own port');
    }
    // Whatever code-server's own router would take for its proxy (it reads `8013x` as 8013) is refused here.
    for (const path of ['/proxy/70000/', '/proxy/8013x/', '/absproxy/+8013/', '/PROXY/0/', '/proxy', '/proxy/']) {
      expect(await forwarded.resolve(podRoute(path)), path).toMatchObject({ status: 403, code: 'PORT_NOT_FORWARDED', message: expect.stringContaining('not a port number') });
    }
    expect(asked).toEqual([]);
  });

  it('refuses the service\'s own port where the editors share its machine', async () => {
    const forwarded = new ForwardedPorts({ listenerOf: async () => 'this', servicePort: () => 8000 });
    expect(await forwarded.resolve(podRoute('/proxy/8000/'))).toMatchObject({ status: 403, code: 'PORT_NOT_FORWARDED', message: expect.stringContaining('this service\'s own port') });
  });

  it('answers 403 for another program\'s port, 502 for a port nothing listens on or whose listener cannot be read', async () => {
    expect(await ports('other').forwarded.resolve(podRoute('/proxy/3000/'))).toMatchObject({ status: 403, code: 'PORT_NOT_FORWARDED' });
    expect(await ports('none').forwarded.resolve(podRoute('/proxy/3000/'))).toMatchObject({ status: 502, code: 'PORT_NOT_LISTENING' });
    expect(await ports(new Error('EMFILE')).forwarded.resolve(podRoute('/proxy/3000/'))).toMatchObject({ status: 502, code: 'PORT_UNAVAILABLE', message: expect.stringContaining('EMFILE') });
  });
});
