// The access token and the client secret reach only the two files meant for them: never the
// service's log, the files under its data and manifests folders, an API answer, or an editor's
// environment.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, startBystander, startTestService } from '../helpers/service.ts';
import { startFakeWorkspace } from './fake-workspace.ts';
import { fakeWorkspaceSettings, tempHome } from './platform-settings.ts';

const cleanups: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Every regular file's text under `dir`. */
async function filesUnder(dir: string): Promise<Array<{ path: string; text: string }>> {
  const found: Array<{ path: string; text: string }> = [];
  for (const entry of await fs.readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    found.push({ path, text: await fs.readFile(path, 'utf8').catch(() => '') });
  }
  return found;
}

describe('the access token and the client secret', () => {
  it('appear in no log line, file of the service, API answer or editor environment', async () => {
    const workspace = await startFakeWorkspace();
    cleanups.push(() => workspace.close());
    // As a deployed app has them: in the service's own environment.
    const saved = { ...process.env };
    Object.assign(process.env, { DATABRICKS_HOST: workspace.url, DATABRICKS_CLIENT_ID: workspace.clientId, DATABRICKS_CLIENT_SECRET: workspace.clientSecret });
    cleanups.push(() => {
      for (const name of ['DATABRICKS_HOST', 'DATABRICKS_CLIENT_ID', 'DATABRICKS_CLIENT_SECRET']) {
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
      }
    });
    const home = await tempHome();
    cleanups.push(() => fs.rm(home, { recursive: true, force: true }));
    // Refused first (the error path logs), then allowed, then rotated once (more tokens, more logging).
    workspace.denyTokenCreate(true);
    const service = await startTestService({
      platform: fakeWorkspaceSettings(workspace, home, { CLAUDE_CODE_TOKEN_EXPIRY_SECONDS: '2', DEVBOX_TOKEN_ROTATION: '0.5', DEVBOX_TOKEN_REVOKE_GRACE_SECONDS: '0.2' }),
    });
    cleanups.push(() => service.stop());
    await eventually(() => workspace.createAttempts >= 2);
    workspace.denyTokenCreate(false);
    await eventually(() => workspace.tokens.length >= 2 && workspace.tokens[0].deleted);
    const editor = await startBystander(service);

    const secrets = [workspace.clientSecret, ...workspace.tokens.map((token) => token.value)];
    const leaks = (where: string, text: string) => secrets.filter((secret) => text.includes(secret)).map(() => where);

    const answers = await Promise.all(['/health', '/config', '/servers', `/servers/${editor.id}`, `/servers/${editor.id}/health`].map((path) => service.request('GET', path)));
    for (const answer of answers) expect(answer.status).toBe(200);
    const environ = await fs.readFile(`/proc/${editor.pid}/environ`, 'utf8');
    const found = [
      ...leaks('log', service.lines.join('\n')),
      ...answers.flatMap((answer, i) => leaks(`answer ${i}`, JSON.stringify(answer.body))),
      ...(await filesUnder(service.settings.dataDir)).flatMap((file) => leaks(file.path, file.text)),
      ...(await filesUnder(service.settings.manifestsDir)).flatMap((file) => leaks(file.path, file.text)),
      ...leaks('editor environment', environ),
    ];
    expect(found).toEqual([]);
    // Where they belong, so the search above looked for the right values.
    expect(await fs.readFile(join(home, '.databrickscfg'), 'utf8')).toContain(workspace.clientSecret);
    const routerConfig = await fs.readFile(join(home, '.claude-code-router', 'config.json'), 'utf8');
    expect(workspace.tokens.some((token) => routerConfig.includes(token.value))).toBe(true);
    // The editor gets the workspace's address (the databricks CLI reads the rest from ~/.databrickscfg), not the client id.
    const variables = environ.split('\0');
    expect(variables).toContain(`DATABRICKS_HOST=${workspace.url}`);
    expect(variables.filter((line) => line.startsWith('DATABRICKS_CLIENT_'))).toEqual([]);
    // The log did say what happened, without the values.
    expect(service.lines.join('\n')).toContain('permission denied');
    expect(service.lines.join('\n')).toMatch(/access token sdk-\d{19} written to/);
  });
});
