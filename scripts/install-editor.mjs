#!/usr/bin/env node
// Installs the pinned code-server, and the Node.js release it requires, into a cache outside
// the checkout (reused by later installs). Runs as `postinstall`, so under whatever Node.js npm
// was started with (20 or newer): plain JavaScript, no dependencies.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pins = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).devbox;

const cacheDir = process.env.DEVBOX_CACHE_DIR
  || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'devbox-controller');
const editorDir = join(cacheDir, `code-server-${pins.codeServer}`);
const nodeDir = join(cacheDir, `node-${pins.codeServerNode}`);
const logFile = join(cacheDir, `install-code-server-${pins.codeServer}.log`);

function log(message) {
  console.log(`[install-editor] ${message}`);
}

function duration(ms) {
  const seconds = Math.round(ms / 1000);
  return seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, '0')} s`;
}

/** npm configuration that concerns reaching the registry: a nested npm keeps it. */
const KEPT_NPM_CONFIG = /^npm_config_(registry|.*:registry|_.*registry|cafile|ca|cert|key|proxy|https_proxy|noproxy|strict_ssl|cache|userconfig|globalconfig|fetch_.*)$/i;

/**
 * The environment of a nested npm: the outer npm's own variables removed. npm passes its
 * settings, its user agent (which names the outer Node.js) and its lifecycle state to scripts,
 * and a nested npm would take them for its own: code-server's postinstall reads the Node.js
 * version from `npm_config_user_agent` and refuses to build when it names the wrong one.
 */
function nestedNpmEnvironment(env, extra = {}) {
  const clean = {};
  for (const [name, value] of Object.entries(env)) {
    if (/^npm_/i.test(name) && !KEPT_NPM_CONFIG.test(name)) continue;
    if (name === 'NODE' || name === 'INIT_CWD') continue;
    clean[name] = value;
  }
  return { ...clean, ...extra };
}

/**
 * Runs a command with its output in the install log, printing a line every 30 s so a long step
 * shows it is alive. On failure the end of the log is printed.
 */
function run(step, cmd, args, options) {
  return new Promise((resolve, reject) => {
    const out = createWriteStream(logFile, { flags: 'a' });
    out.write(`\n$ ${cmd} ${args.join(' ')}   (in ${options.cwd})\n`);
    const started = Date.now();
    const child = spawn(cmd, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    const ticker = setInterval(() => log(`  … ${step}: ${duration(Date.now() - started)} so far`), 30_000);
    const finish = (error) => {
      clearInterval(ticker);
      out.end(() => {
        if (!error) return resolve();
        const tail = readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-30).join('\n');
        console.error(tail);
        reject(new Error(`${step} failed: ${error} (the whole output is in ${logFile})`));
      });
    };
    child.on('error', (error) => finish(`${cmd} could not run: ${error.message}`));
    child.on('close', (code, signal) => finish(code === 0 ? undefined : `${cmd} ${args[0]} exited with ${code ?? signal}`));
  });
}

/** Times a step and reports it. */
async function step(title, estimate, fn) {
  log(`${title} (${estimate})`);
  const started = Date.now();
  const result = await fn();
  log(`  done in ${duration(Date.now() - started)}`);
  return result;
}

function krb5HeadersPresent() {
  return existsSync('/usr/include/krb5.h') || existsSync('/usr/include/krb5/krb5.h');
}

/**
 * code-server's `kerberos` module builds against libkrb5's headers. Bring them from Debian when
 * we may (root with apt-get); else the editor is built without that module (see withoutKerberos).
 */
async function ensureKrb5Headers() {
  if (process.env.DEVBOX_EDITOR_WITHOUT_KERBEROS === '1') return false;
  if (krb5HeadersPresent()) return true;
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) return false;
  try {
    await step('installing libkrb5-dev with apt-get', 'about 20 s', async () => {
      const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
      await run('apt-get update', 'apt-get', ['update', '-q'], { cwd: root, env });
      await run('apt-get install libkrb5-dev', 'apt-get', ['install', '-y', '-q', '--no-install-recommends', 'libkrb5-dev'], { cwd: root, env });
    });
  } catch (error) {
    log(`apt-get could not install libkrb5-dev (${error.message})`);
  }
  return krb5HeadersPresent();
}

/**
 * Drops the `kerberos` module from the editor's dependencies. VS Code loads it only to answer a
 * proxy's Kerberos (Negotiate) challenge, with a dynamic import, so everything else works.
 */
function withoutKerberos(vscodeDir) {
  const packageFile = join(vscodeDir, 'package.json');
  const pkg = JSON.parse(readFileSync(packageFile, 'utf8'));
  delete pkg.dependencies?.kerberos;
  writeFileSync(packageFile, `${JSON.stringify(pkg, null, 2)}\n`);
  const lockFile = join(vscodeDir, 'npm-shrinkwrap.json');
  if (existsSync(lockFile)) {
    const lock = JSON.parse(readFileSync(lockFile, 'utf8'));
    delete lock.packages?.['']?.dependencies?.kerberos;
    delete lock.packages?.['node_modules/kerberos'];
    writeFileSync(lockFile, `${JSON.stringify(lock, null, 2)}\n`);
  }
}

/** A fresh folder to install into, renamed into place only when complete. */
function temporaryFolder(final) {
  const tmp = `${final}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  writeFileSync(join(tmp, 'package.json'), '{"private":true}\n');
  return tmp;
}

/** npm's node-linux-<arch> package is a whole Node.js release, headers included. */
async function ensureNode() {
  const home = join(nodeDir, 'node_modules', `node-linux-${process.arch}`);
  if (existsSync(join(home, 'bin', 'node'))) return home;
  await step(`Node.js ${pins.codeServerNode}, which code-server requires`, 'about 15 s, 190 MB', async () => {
    const tmp = temporaryFolder(nodeDir);
    await run(`downloading Node.js ${pins.codeServerNode}`, 'npm', ['install', '--no-save', '--ignore-scripts', '--no-audit', '--no-fund',
      `node-linux-${process.arch}@${pins.codeServerNode}`], { cwd: tmp, env: nestedNpmEnvironment(process.env) });
    rmSync(nodeDir, { recursive: true, force: true });
    renameSync(tmp, nodeDir);
  });
  return home;
}

function folderSize(path) {
  const result = spawnSync('du', ['-sm', path], { encoding: 'utf8' });
  return result.status === 0 ? `${result.stdout.split('\t')[0]} MB` : 'size unknown';
}

async function ensureEditor() {
  const wrapper = join(editorDir, 'bin', 'code-server');
  if (existsSync(join(editorDir, '.complete'))) {
    log(`code-server ${pins.codeServer} already installed: ${wrapper}`);
    return;
  }
  const started = Date.now();
  mkdirSync(cacheDir, { recursive: true });
  writeFileSync(logFile, `install of code-server ${pins.codeServer}, ${new Date().toISOString()}\n`);
  log(`installing code-server ${pins.codeServer} into ${cacheDir}: once, about 3 min and 800 MB; later installs reuse it`);
  log(`the output of each step goes to ${logFile}`);
  const nodeHome = await ensureNode();
  const kerberos = await ensureKrb5Headers();
  // The nested npm runs on the Node.js code-server requires, and builds against its headers.
  const env = nestedNpmEnvironment(process.env, {
    PATH: `${join(nodeHome, 'bin')}:${process.env.PATH}`,
    npm_config_nodedir: nodeHome,
  });
  const tmp = temporaryFolder(editorDir);
  await step(`downloading code-server ${pins.codeServer}`, 'about 30 s', () =>
    run(`downloading code-server ${pins.codeServer}`, 'npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', `code-server@${pins.codeServer}`],
      { cwd: tmp, env }));
  if (!kerberos) {
    log(`${process.env.DEVBOX_EDITOR_WITHOUT_KERBEROS === '1' ? 'DEVBOX_EDITOR_WITHOUT_KERBEROS=1'
      : 'libkrb5-dev is not installed and apt-get cannot be used here'}: building code-server without its kerberos module`);
    log('  (editors work; only a proxy that asks for Kerberos authentication cannot be passed. Install libkrb5-dev and run npm install again to have it)');
    withoutKerberos(join(tmp, 'node_modules', 'code-server', 'lib', 'vscode'));
  }
  await step("building code-server's native modules", 'about 2 to 3 min', async () => {
    // npm 11 blocks dependency install scripts unless approved; older npm runs them anyway.
    spawnSync('npm', ['install-scripts', 'approve', '--all', '--no-allow-scripts-pin'], { cwd: tmp, env, stdio: 'ignore' });
    await run("building code-server's native modules", 'npm', ['rebuild', '--foreground-scripts'], { cwd: tmp, env });
  });
  mkdirSync(join(tmp, 'bin'));
  const entry = join(editorDir, 'node_modules', 'code-server', 'out', 'node', 'entry.js');
  writeFileSync(join(tmp, 'bin', 'code-server'),
    `#!/bin/sh\n# code-server ${pins.codeServer} on the Node.js release it requires.\nexec "${join(nodeHome, 'bin', 'node')}" "${entry}" "$@"\n`);
  chmodSync(join(tmp, 'bin', 'code-server'), 0o755);
  writeFileSync(join(tmp, '.complete'), `${new Date().toISOString()}${kerberos ? '' : ' without kerberos'}\n`);
  rmSync(editorDir, { recursive: true, force: true });
  renameSync(tmp, editorDir);
  log(`installed in ${duration(Date.now() - started)}: ${wrapper} (${folderSize(cacheDir)} in ${cacheDir})`);
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
  } catch (error) {
    return error.code === 'EPERM';
  }
}

async function main() {
  if (process.env.DEVBOX_SKIP_EDITOR_INSTALL === '1') {
    log('DEVBOX_SKIP_EDITOR_INSTALL=1: not installing code-server');
    return;
  }
  try {
    removeStaleTemporaries();
    await ensureEditor();
  } catch (error) {
    console.error(`[install-editor] ${error.message}`);
    console.error('[install-editor] set DEVBOX_EDITOR_BIN to an existing code-server, or DEVBOX_SKIP_EDITOR_INSTALL=1 to skip');
    process.exit(1);
  }
}

await main();
