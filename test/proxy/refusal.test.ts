import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { request, startService, startTarget, type Service, type Target } from './fixtures.ts';

// The controller's rule also refuses the service's own port; that is tested against the real
// service in test/api/logs-and-proxy.test.ts.
describe('ports the proxy refuses', () => {
  let target: Target;
  let service: Service;

  beforeEach(async () => {
    target = await startTarget();
  });

  afterEach(async () => {
    await service.close();
    await target.close();
  });

  it('answers 404 for a port no running managed editor has, and never contacts it', async () => {
    // The target listens, but the controller does not manage it (or it is stopped).
    service = await startService(() => false);
    for (const path of [`/vscode/${target.port}/`, `/editor/${target.port}/static/x.js`, `/vscode/${target.port}`]) {
      for (const method of ['GET', 'POST']) {
        const answer = await request(`${service.base}${path}`, { method, body: method === 'POST' ? '{}' : undefined });
        expect(answer.status).toBe(404);
        expect(answer.headers['content-type']).toMatch(/^application\/json/);
        const { error } = JSON.parse(answer.text);
        expect(error.code).toBe('EDITOR_NOT_FOUND');
        expect(error.message).toContain(String(target.port));
      }
    }
    expect(target.hits).toBe(0);
  });
});
