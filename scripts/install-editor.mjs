#!/usr/bin/env node
// Installs the pinned code-server, and the Node.js release it requires, into a cache outside
// the checkout (reused by later installs). Runs as `postinstall`, so under whatever Node.js npm
// was started with: plain JavaScript, no dependencies.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pins = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).devbox;

export const cacheDir = process.env.DEVBOX_CACHE_DIR
  || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'devbox-controller');
const editorDir = join(cacheDir, `code-server-${pins.codeServer}`);
const nodeDir = join(cacheDir, `node-${pins.codeServerNode}`);

function log(message) {
  console.log(`[install-editor] ${message}`);
}

function run(cmd, args, options = {}) {
  const result = spawnSync(cmd, args, { stdio: 'inherit', ...options });
  if (result.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} exited with ${result.status ?? result.signal}`);
  }
}

/** The kerberos module code-server builds needs libkrb5's headers: bring them from Debian. */
function ensureSystemPackages() {
  if (existsSync('/usr/include/krb5.h') || existsSync('/usr/include/krb5/krb5.h')) return;
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
    throw new Error('code-server needs the libkrb5-dev headers: install them (apt-get install libkrb5-dev) and run npm install again');
  }
  log('installing libkrb5-dev with apt-get');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  run('apt-get', ['update', '-qq'], { env });
  run('apt-get', ['install', '-y', '-qq', 'libkrb5-dev'], { env });
}

/** npm's node-linux-<arch> package is a whole Node.js release, headers included. */
function ensureNode() {
  const bin = join(nodeDir, 'node_modules', `node-linux-${process.arch}`, 'bin', 'node');
  if (existsSync(bin)) return join(nodeDir, 'node_modules', `node-linux-${process.arch}`);
  log(`installing Node.js ${pins.codeServerNode} for code-server into ${nodeDir}`);
  const tmp = `${nodeDir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  writeFileSync(join(tmp, 'package.json'), '{"private":true}\n');
  run('npm', ['install', '--no-save', '--ignore-scripts', '--no-audit', '--no-fund',
    `node-linux-${process.arch}@${pins.codeServerNode}`], { cwd: tmp });
  rmSync(nodeDir, { recursive: true, force: true });
  renameSync(tmp, nodeDir);
  return join(nodeDir, 'node_modules', `node-linux-${process.arch}`);
}

function ensureEditor() {
  const wrapper = join(editorDir, 'bin', 'code-server');
  if (existsSync(join(editorDir, '.complete'))) {
    log(`code-server ${pins.codeServer} already installed: ${wrapper}`);
    return;
  }
  ensureSystemPackages();
  const nodeHome = ensureNode();
  log(`installing code-server ${pins.codeServer} into ${editorDir} (a few minutes)`);
  const tmp = `${editorDir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  writeFileSync(join(tmp, 'package.json'), '{"private":true}\n');
  const env = {
    ...process.env,
    PATH: `${join(nodeHome, 'bin')}:${process.env.PATH}`,
    npm_config_nodedir: nodeHome,
  };
  run('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', `code-server@${pins.codeServer}`],
    { cwd: tmp, env });
  // npm 11 blocks dependency install scripts unless approved; older npm runs them anyway.
  spawnSync('npm', ['install-scripts', 'approve', '--all', '--no-allow-scripts-pin'], { cwd: tmp, env, stdio: 'ignore' });
  run('npm', ['rebuild', '--foreground-scripts'], { cwd: tmp, env });
  mkdirSync(join(tmp, 'bin'));
  const entry = join(editorDir, 'node_modules', 'code-server', 'out', 'node', 'entry.js');
  writeFileSync(join(tmp, 'bin', 'code-server'),
    `#!/bin/sh\n# code-server ${pins.codeServer} on the Node.js release it requires.\nexec "${join(nodeHome, 'bin', 'node')}" "${entry}" "$@"\n`);
  chmodSync(join(tmp, 'bin', 'code-server'), 0o755);
  writeFileSync(join(tmp, '.complete'), `${new Date().toISOString()}\n`);
  rmSync(editorDir, { recursive: true, force: true });
  renameSync(tmp, editorDir);
  log(`installed ${wrapper}`);
}

/** Leftovers of installs that were interrupted. */
function removeStaleTemporaries() {
  if (!existsSync(cacheDir)) return;
  for (const entry of readdirSync(cacheDir)) {
    const pid = Number(/\.tmp-(\d+)$/.exec(entry)?.[1]);
    if (pid && !isAlive(pid)) rmSync(join(cacheDir, entry), { recursive: true, force: true });
  }
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

if (process.env.DEVBOX_SKIP_EDITOR_INSTALL === '1') {
  log('DEVBOX_SKIP_EDITOR_INSTALL=1: not installing code-server');
} else {
  try {
    removeStaleTemporaries();
    ensureEditor();
  } catch (error) {
    console.error(`[install-editor] ${error.message}`);
    console.error('[install-editor] set DEVBOX_EDITOR_BIN to an existing code-server, or DEVBOX_SKIP_EDITOR_INSTALL=1 to skip');
    process.exit(1);
  }
}
