// scripts/install-editor.mjs (postinstall) against a fake npm that records what each nested run
// was given: the real install takes minutes and is exercised cold by every CI run.
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const INSTALLER = new URL('../../scripts/install-editor.mjs', import.meta.url).pathname;
const PINS = JSON.parse(await fs.readFile(new URL('../../package.json', import.meta.url), 'utf8')).devbox;

/**
 * A fake npm: `install node-linux-*` makes a Node.js folder (its node is the real one),
 * `install code-server@*` makes a code-server package whose VS Code depends on kerberos, and
 * every call appends its arguments, environment and (for rebuild) VS Code's dependencies to a log.
 */
const FAKE_NPM = (record: string, realNode: string) => `#!${realNode}
const fs = require('node:fs');
const path = require('node:path');
const args = process.argv.slice(2);
const vscode = path.join('node_modules', 'code-server', 'lib', 'vscode');
const entry = { args, env: process.env, cwd: process.cwd() };
if (args[0] === 'install' && args.some((a) => a.startsWith('node-linux-'))) {
  const bin = path.join('node_modules', 'node-linux-' + process.arch, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  fs.symlinkSync(${JSON.stringify(realNode)}, path.join(bin, 'node'));
} else if (args[0] === 'install' && args.some((a) => a.startsWith('code-server@'))) {
  fs.mkdirSync(vscode, { recursive: true });
  fs.writeFileSync(path.join(vscode, 'package.json'), JSON.stringify({ dependencies: { kerberos: '2.1.1', 'node-pty': '1.0.0' } }));
  fs.writeFileSync(path.join(vscode, 'npm-shrinkwrap.json'), JSON.stringify({ packages: { '': { dependencies: { kerberos: '2.1.1' } }, 'node_modules/kerberos': {} } }));
} else if (args[0] === 'rebuild') {
  entry.vscodeDependencies = JSON.parse(fs.readFileSync(path.join(vscode, 'package.json'), 'utf8')).dependencies;
  entry.vscodeLocked = Object.keys(JSON.parse(fs.readFileSync(path.join(vscode, 'npm-shrinkwrap.json'), 'utf8')).packages);
}
fs.appendFileSync(${JSON.stringify(record)}, JSON.stringify(entry) + '\\n');
console.log('fake npm ' + args.join(' ') + ' says hello');
process.exit(process.env.FAKE_NPM_FAILS === args[0] ? 1 : 0);
`;

const KRB5_HEADERS = (await Promise.all(['/usr/include/krb5.h', '/usr/include/krb5/krb5.h']
  .map((file) => fs.access(file).then(() => true, () => false)))).some(Boolean);

interface Call { args: string[]; env: Record<string, string>; cwd: string; vscodeDependencies?: Record<string, string>; vscodeLocked?: string[] }

let root: string;
let cache: string;
let record: string;

beforeEach(async () => {
  root = await fs.mkdtemp(join(tmpdir(), 'devbox-install-'));
  cache = join(root, 'cache');
  record = join(root, 'calls.jsonl');
  await fs.mkdir(join(root, 'bin'));
  await fs.writeFile(join(root, 'bin', 'npm'), FAKE_NPM(record, process.execPath), { mode: 0o755 });
});

afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

/** Runs the installer the way `npm install` does: inside an npm script, on the outer npm's variables. */
function install(extra: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  const env = {
    PATH: `${join(root, 'bin')}:${process.env.PATH}`,
    HOME: root,
    DEVBOX_CACHE_DIR: cache,
    npm_config_user_agent: 'npm/11.19.1 node/v20.20.2 linux x64 workspaces/false',
    npm_config_nodedir: '/usr',
    npm_config_prefix: '/usr',
    npm_config_registry: 'http://127.0.0.1:9/',
    npm_lifecycle_event: 'postinstall',
    npm_package_name: 'devbox-controller',
    npm_execpath: '/usr/lib/node_modules/npm/bin/npm-cli.js',
    NODE: '/usr/bin/node',
    INIT_CWD: root,
    // Never apt-get from a test: a build without kerberos unless the headers are installed.
    ...(KRB5_HEADERS ? {} : { DEVBOX_EDITOR_WITHOUT_KERBEROS: '1' }),
    ...extra,
  };
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [INSTALLER], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('close', (code) => resolve({ code, output }));
  });
}

async function calls(): Promise<Call[]> {
  return (await fs.readFile(record, 'utf8')).trim().split('\n').map((line) => JSON.parse(line));
}

describe('install-editor', () => {
  it('gives nested npm runs none of the outer npm\'s variables, only its registry settings', async () => {
    const { code, output } = await install();
    expect(code, output).toBe(0);
    const made = await calls();
    expect(made.map((call) => call.args[0])).toEqual(['install', 'install', 'install-scripts', 'rebuild']);
    for (const call of made) {
      const npmVariables = Object.keys(call.env).filter((name) => /^npm_/i.test(name)).sort();
      expect(npmVariables).toEqual(call.args[0] === 'install' && call.args.some((a) => a.startsWith('node-linux-'))
        ? ['npm_config_registry']
        : ['npm_config_nodedir', 'npm_config_registry']);
      expect(call.env.NODE).toBeUndefined();
      expect(call.env.INIT_CWD).toBeUndefined();
    }
  });

  it('builds code-server on the Node.js it requires, against that release\'s headers', async () => {
    const { code, output } = await install();
    expect(code, output).toBe(0);
    const rebuild = (await calls()).find((call) => call.args[0] === 'rebuild')!;
    const nodeHome = join(cache, `node-${PINS.codeServerNode}`, 'node_modules', `node-linux-${process.arch}`);
    expect(rebuild.env.npm_config_nodedir).toBe(nodeHome);
    expect(rebuild.env.PATH.split(':')[0]).toBe(join(nodeHome, 'bin'));
    const launcher = await fs.readFile(join(cache, `code-server-${PINS.codeServer}`, 'bin', 'code-server'), 'utf8');
    expect(launcher).toContain(`exec "${join(nodeHome, 'bin', 'node')}"`);
    await expect(fs.access(join(cache, `code-server-${PINS.codeServer}`, '.complete'))).resolves.toBeUndefined();
  });

  it('shows each long step with its expected and its measured duration', async () => {
    const { output } = await install();
    expect(output).toMatch(/installing code-server [\d.]+ into .*: once, about 3 min/);
    expect(output).toMatch(/downloading code-server [\d.]+ \(about 30 s\)\n.*done in \d+ s/);
    expect(output).toMatch(/building code-server's native modules \(about 2 to 3 min\)\n.*done in \d+ s/);
    expect(output).toMatch(/installed in \d+ s: /);
  });

  it('builds code-server without its kerberos module where libkrb5\'s headers cannot be had', async () => {
    const { code, output } = await install({ DEVBOX_EDITOR_WITHOUT_KERBEROS: '1' });
    expect(code, output).toBe(0);
    expect(output).toContain('building code-server without its kerberos module');
    const rebuild = (await calls()).find((call) => call.args[0] === 'rebuild')!;
    expect(rebuild.vscodeDependencies).toEqual({ 'node-pty': '1.0.0' });
    expect(rebuild.vscodeLocked).toEqual(['']);
  });

  it.skipIf(!KRB5_HEADERS)('keeps kerberos where libkrb5\'s headers are installed', async () => {
    const { code, output } = await install();
    expect(code, output).toBe(0);
    expect(output).not.toContain('without its kerberos module');
    const rebuild = (await calls()).find((call) => call.args[0] === 'rebuild')!;
    expect(rebuild.vscodeDependencies).toEqual({ kerberos: '2.1.1', 'node-pty': '1.0.0' });
  });

  it('stops with the failing step, the end of its output and where the whole log is', async () => {
    const { code, output } = await install({ FAKE_NPM_FAILS: 'rebuild' });
    expect(code).toBe(1);
    expect(output).toMatch(/building code-server's native modules failed: npm rebuild exited with 1 \(the whole output is in .*install-code-server-[\d.]+\.log\)/);
    expect(output).toContain('fake npm rebuild --foreground-scripts says hello');
    await expect(fs.access(join(cache, `code-server-${PINS.codeServer}`))).rejects.toThrow();
  });
});
