// Extension installs run code-server's own CLI: here the stub editor, behind a wrapper that
// records the environment it was given.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CodeServerExtensionInstaller, judgeInstall } from '../../src/extensions/installer.ts';
import { resolveEditorBinary } from '../../src/runtime/editor-binary.ts';
import { STUB_EDITOR } from '../helpers/service.ts';
import { buildVsix } from './vsix.ts';

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

describe('with the real code-server', () => {
  const bin = resolveEditorBinary().path;
  const targetIn = (root: string) => ({
    name: 'real', extensionsDir: join(root, 'extensions'), userDataDir: join(root, 'user-data'), configPath: join(root, 'config.yaml'),
  });

  it('records an extension whose name holds "error" as installed when code-server says so', async () => {
    const vsix = join(dir, 'usernamehw.errorlens-3.16.0.vsix');
    buildVsix(vsix, 'usernamehw', 'errorlens', '3.16.0');
    const target = targetIn(dir);
    const outcome = await new CodeServerExtensionInstaller(bin).install(target, vsix);
    expect(outcome.ok, outcome.message).toBe(true);
    const listed = await execa(bin, ['--config', target.configPath, '--extensions-dir', target.extensionsDir,
      '--user-data-dir', target.userDataDir, '--list-extensions', '--show-versions']);
    expect(listed.stdout.split('\n')).toContain('usernamehw.errorlens@3.16.0');
  }, 60_000);

  it('installs a pinned version from DEVBOX_VSIX_DIR over a newer one', async () => {
    const vsixDir = join(dir, 'vsix');
    await fs.mkdir(vsixDir);
    buildVsix(join(vsixDir, 'acme.pin-1.0.0.vsix'), 'acme', 'pin', '1.0.0');
    buildVsix(join(vsixDir, 'acme.pin-2.0.0.vsix'), 'acme', 'pin', '2.0.0');
    const target = targetIn(dir);
    const installer = new CodeServerExtensionInstaller(bin, 60_000, vsixDir);
    expect((await installer.install(target, 'acme.pin')).ok).toBe(true);
    expect(await installer.installed(target)).toEqual(new Map([['acme.pin', '2.0.0']]));
    const pinned = await installer.install(target, 'acme.pin@1.0.0');
    expect(pinned.ok, pinned.message).toBe(true);
    expect(await installer.installed(target)).toEqual(new Map([['acme.pin', '1.0.0']]));
    expect((await installer.uninstall(target, 'acme.pin')).ok).toBe(true);
    expect(await installer.installed(target)).toEqual(new Map());
  }, 60_000);

  it('gives a marketplace id that cannot be fetched a failure that says why, quickly', async () => {
    const started = Date.now();
    const outcome = await new CodeServerExtensionInstaller(bin).install(targetIn(dir), 'nosuch.publisher-thing');
    expect(outcome.ok).toBe(false);
    expect(outcome.message).toMatch(/\S/);
    expect(outcome.message).not.toBe('Installing extensions...');
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 60_000);
});

it('judges by the exit code and the "successfully installed" line, not by the word "error"', () => {
  expect(judgeInstall(0, "Installing extensions...\nExtension 'usernamehw.errorlens' v3.16.0 was successfully installed.\n"))
    .toEqual({ ok: true, version: '3.16.0' });
  expect(judgeInstall(0, 'Installing extensions...\n')).toMatchObject({ ok: false });
  expect(judgeInstall(1, "Extension 'x.y' v1.0.0 was successfully installed.\nError while installing extensions: boom\n"))
    .toEqual({ ok: false, message: 'Error while installing extensions: boom' });
});
