// Extension installs run code-server's own CLI: here the stub editor, behind a wrapper that
// records the environment it was given.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { CodeServerExtensionInstaller } from '../../src/extensions/installer.ts';
import { STUB_EDITOR } from '../helpers/service.ts';

let dir: string;

beforeEach(async () => {
  dir = await fs.mkdtemp(join(tmpdir(), 'devbox-installer-'));
  process.env.DATABRICKS_CLIENT_SECRET = 'never-for-editors';
});

afterEach(async () => {
  delete process.env.DATABRICKS_CLIENT_SECRET;
  await fs.rm(dir, { recursive: true, force: true });
});

it("installs into the server's own folders with the editor's environment, without the service's secrets", async () => {
  const bin = join(dir, 'code-server');
  await fs.writeFile(bin, `#!/bin/sh\nenv > "${dir}/env.txt"\nexec "${process.execPath}" "${STUB_EDITOR}" "$@"\n`, { mode: 0o755 });
  const target = {
    name: 'alpha',
    extensionsDir: join(dir, 'extensions'),
    userDataDir: join(dir, 'user-data'),
    configPath: join(dir, 'config.yaml'),
  };
  const outcome = await new CodeServerExtensionInstaller(bin).install(target, 'publisher.tool');
  expect(outcome).toEqual({ ok: true, version: '1.0.0' });
  await expect(fs.access(join(target.extensionsDir, 'publisher.tool-1.0.0', 'package.json'))).resolves.toBeUndefined();
  const env = await fs.readFile(join(dir, 'env.txt'), 'utf8');
  expect(env).not.toContain('never-for-editors');
  expect(env).toContain('DEVBOX_SERVER_NAME=alpha\n');
  expect(await fs.readFile(target.configPath, 'utf8')).toContain('auth: none');
});
