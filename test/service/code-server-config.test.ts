// code-server never reads or writes the user's ~/.config/code-server: every invocation (editor
// start, extension install, doctor's --version and start check) passes its own --config.
import { existsSync, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runDoctor } from '../../src/doctor.ts';
import { killEditors, startTestService, STUB_EDITOR, type TestService } from '../helpers/service.ts';

let root: string;
let home: string;
let argsLog: string;
const saved: Record<string, string | undefined> = {};
const VARIABLES = ['HOME', 'XDG_CONFIG_HOME', 'CODE_SERVER_CONFIG', 'STUB_ARGS_LOG'];

beforeEach(async () => {
  root = await fs.mkdtemp(join(tmpdir(), 'devbox-config-home-'));
  home = join(root, 'home');
  await fs.mkdir(home);
  argsLog = join(root, 'stub-args.jsonl');
  for (const key of VARIABLES) saved[key] = process.env[key];
});

afterEach(async () => {
  for (const key of VARIABLES) {
    if (saved[key] === undefined) delete process.env[key];
    else process.env[key] = saved[key];
  }
  await fs.rm(root, { recursive: true, force: true });
});

/** Every invocation of the stub, as its argument list. */
async function invocations(): Promise<string[][]> {
  const text = await fs.readFile(argsLog, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map((line) => JSON.parse(line));
}

function configOf(args: string[]): string | undefined {
  const i = args.indexOf('--config');
  return i >= 0 ? args[i + 1] : undefined;
}

describe('code-server\'s config file', () => {
  it('is the server\'s own for the editor and its extension installs; ~/.config/code-server is never made', async () => {
    // The editors and installs inherit the service's environment.
    process.env.HOME = home;
    process.env.XDG_CONFIG_HOME = join(home, '.config');
    delete process.env.CODE_SERVER_CONFIG;
    process.env.STUB_ARGS_LOG = argsLog;
    let service: TestService | undefined;
    try {
      service = await startTestService();
      const { id } = (await service.request('POST', '/servers', { name: 'Configured', extensions: ['redhat.vscode-yaml'] })).body;
      const started = await service.request('POST', `/servers/${id}/start`);
      expect(started.status, JSON.stringify(started.body)).toBe(200);

      const calls = await invocations();
      const install = calls.filter((args) => args.includes('--install-extension'));
      const editor = calls.filter((args) => args.includes('--bind-addr'));
      expect(install).toHaveLength(1);
      expect(editor).toHaveLength(1);
      const own = join(service.settings.dataDir, 'editors', 'configured', 'config.yaml');
      for (const args of calls) expect(configOf(args), JSON.stringify(args)).toBe(own);
      expect(await fs.readFile(own, 'utf8')).toContain('auth: none');
      expect(existsSync(join(home, '.config', 'code-server'))).toBe(false);
    } finally {
      await service?.stop();
    }
  });

  it('is a throw-away one for doctor\'s --version and start check, which leave nothing in the home folder', async () => {
    const lines: string[] = [];
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      STUB_ARGS_LOG: argsLog,
      DEVBOX_EDITOR_BIN: STUB_EDITOR,
      DEVBOX_PORT: '0',
      DEVBOX_MANIFESTS_DIR: join(root, 'manifests'),
      DEVBOX_DATA_DIR: join(root, 'data'),
    };
    delete env.CODE_SERVER_CONFIG;
    delete env.DEVBOX_CONFIG;
    try {
      const code = await runDoctor(env, (line) => lines.push(line));
      expect(code, lines.join('\n')).toBe(0);
    } finally {
      await killEditors(join(root, 'data'));
    }
    const calls = await invocations();
    expect(calls.some((args) => args.includes('--version'))).toBe(true);
    expect(calls.some((args) => args.includes('--bind-addr'))).toBe(true);
    for (const args of calls) {
      const config = configOf(args);
      expect(config, JSON.stringify(args)).toBeDefined();
      // Doctor's folders are temporary, and gone when it is done.
      expect(config!.startsWith(tmpdir()), config).toBe(true);
      expect(existsSync(config!), config).toBe(false);
    }
    expect(existsSync(join(home, '.config', 'code-server'))).toBe(false);
    expect(await fs.readdir(home)).toEqual([]);
  }, 60_000);
});
