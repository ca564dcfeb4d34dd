import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { request, startService, startTarget, type Service, type Target } from './fixtures.ts';

describe('redirects', () => {
  let target: Target;
  let service: Service;

  beforeEach(async () => {
    target = await startTarget();
    service = await startService(() => (port) => port === target.port);
  });

  afterEach(async () => {
    await service.close();
    await target.close();
  });

  it('redirects /vscode/{port} without the slash to /vscode/{port}/, keeping the query', async () => {
    const answer = await request(`${service.base}/vscode/${target.port}?folder=/workspace`);
    expect([301, 302, 307, 308]).toContain(answer.status);
    expect(answer.headers.location).toBe(`/vscode/${target.port}/?folder=/workspace`);
    expect(target.hits).toBe(0);
  });

  const redirectTo = async (location: string, prefix = 'vscode'): Promise<string | undefined> => {
    const answer = await request(`${service.base}/${prefix}/${target.port}/redirect?to=${encodeURIComponent(location)}`);
    expect(answer.status).toBe(302);
    return answer.headers.location;
  };

  it("keeps an editor's absolute-path redirect under the prefix", async () => {
    expect(await redirectTo('/login?to=%2F')).toBe(`/vscode/${target.port}/login?to=%2F`);
    expect(await redirectTo('/login', 'editor')).toBe(`/editor/${target.port}/login`);
  });

  it("rewrites a redirect to the editor's own loopback address to stay under the prefix", async () => {
    expect(await redirectTo(`http://127.0.0.1:${target.port}/?folder=/w#top`)).toBe(`/vscode/${target.port}/?folder=/w#top`);
    expect(await redirectTo(`http://localhost:${target.port}/a`)).toBe(`/vscode/${target.port}/a`);
  });

  it('leaves relative redirects and other hosts alone', async () => {
    expect(await redirectTo('./login')).toBe('./login');
    expect(await redirectTo('https://github.com/login/oauth')).toBe('https://github.com/login/oauth');
    expect(await redirectTo('//evil.example/')).toBe('//evil.example/');
  });
});
