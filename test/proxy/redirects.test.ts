import { describe, expect, it } from 'vitest';
import { request, proxyToTarget } from './fixtures.ts';

describe('redirects', () => {
  const ctx = proxyToTarget();

  it('redirects /vscode/{port} without the slash to /vscode/{port}/, keeping the query', async () => {
    const answer = await request(`${ctx.service.base}/vscode/${ctx.target.port}?folder=/workspace`);
    expect([301, 302, 307, 308]).toContain(answer.status);
    expect(answer.headers.location).toBe(`/vscode/${ctx.target.port}/?folder=/workspace`);
    expect(ctx.target.hits).toBe(0);
  });

  const redirectTo = async (location: string, prefix = 'vscode'): Promise<string | undefined> => {
    const answer = await request(`${ctx.service.base}/${prefix}/${ctx.target.port}/redirect?to=${encodeURIComponent(location)}`);
    expect(answer.status).toBe(302);
    return answer.headers.location;
  };

  it("keeps an editor's absolute-path redirect under the prefix", async () => {
    expect(await redirectTo('/login?to=%2F')).toBe(`/vscode/${ctx.target.port}/login?to=%2F`);
    expect(await redirectTo('/login', 'editor')).toBe(`/editor/${ctx.target.port}/login`);
  });

  it("rewrites a redirect to the editor's own loopback address to stay under the prefix", async () => {
    expect(await redirectTo(`http://127.0.0.1:${ctx.target.port}/?folder=/w#top`)).toBe(`/vscode/${ctx.target.port}/?folder=/w#top`);
    expect(await redirectTo(`http://localhost:${ctx.target.port}/a`)).toBe(`/vscode/${ctx.target.port}/a`);
  });

  it('leaves relative redirects and other hosts alone', async () => {
    expect(await redirectTo('./login')).toBe('./login');
    expect(await redirectTo('https://github.com/login/oauth')).toBe('https://github.com/login/oauth');
    expect(await redirectTo('//evil.example/')).toBe('//evil.example/');
  });
});
