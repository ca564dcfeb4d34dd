// `npm run doctor`: checks what `npm start` depends on (Node.js, settings, config, the editor
// binary) and proves the editor starts, the way the service launches it, in a throw-away folder.
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { configFileFrom, DEFAULT_CONFIG, loadConfig, loadSettings, SettingsError, type Config, type Settings } from './config/settings.ts';
import { manifestsNamespace } from './config/runtime-config.ts';
import { portIsFree } from './runtime/port-probe.ts';
import { PACKAGE_JSON } from './core/project.ts';
import { ManifestStore } from './manifests/store.ts';
import { EditorNotFoundError, installedEditorPath, resolveEditorBinary, type EditorBinary } from './runtime/editor-binary.ts';
import { checkHealth, waitHealthy } from './runtime/health.ts';
import { editorEnvironment } from './core/child-env.ts';
import { writeEditorConfig } from './core/editor-config.ts';
import { ProcessWorkload } from './runtime/processes.ts';
import { pidOf, type RuntimeRef } from './runtime/interface.ts';
import { groupExists } from './core/procfs.ts';
import { DataLayout } from './workspace/layout.ts';

type Level = 'ok' | 'warn' | 'FAIL';

interface Report {
  line(level: Level, text: string, fix?: string): void;
  info(text: string): void;
  readonly failures: number;
}

function consoleReport(write: (text: string) => void): Report {
  let failures = 0;
  return {
    line(level, text, fix) {
      if (level === 'FAIL') failures++;
      write(`${level.padEnd(4)}  ${text}`);
      if (fix) write(`      fix: ${fix}`);
    },
    info(text) {
      write(`      ${text}`);
    },
    get failures() {
      return failures;
    },
  };
}

/** Runs every check, printing one line each; resolves to the exit code (0 all well, 1 otherwise). */
export async function runDoctor(env: NodeJS.ProcessEnv = process.env, write: (text: string) => void = console.log): Promise<number> {
  const report = consoleReport(write);
  write('devbox-controller doctor');
  checkNode(report);
  const settings = await checkSettings(env, report);
  const config = checkConfig(env, report);
  if (settings) await checkManifests(settings, report);
  const editor = checkEditorBinary(env, report);
  if (editor) {
    const versionOk = await checkEditorVersion(editor, env, report);
    if (versionOk) await checkEditorStarts(editor, config ?? DEFAULT_CONFIG, env, report);
  }
  if (report.failures === 0) {
    write('All is well: `npm start` will serve with working editors.');
    return 0;
  }
  write(`${report.failures} problem${report.failures === 1 ? '' : 's'}: fix the lines marked FAIL above, then run \`npm run doctor\` again.`);
  return 1;
}

/** The service needs the Node.js of package.json's engines (type stripping, current libraries). */
function checkNode(report: Report): void {
  const wanted = /^>=\s*(\d+)\.(\d+)/.exec(PACKAGE_JSON.engines.node);
  const [major, minor] = process.versions.node.split('.').map(Number);
  const enough = !wanted || major > Number(wanted[1]) || (major === Number(wanted[1]) && minor >= Number(wanted[2]));
  if (enough) {
    report.line('ok', `Node.js ${process.version} runs the service (${process.execPath})`);
  } else {
    report.line('FAIL', `Node.js ${process.version} runs the service; it needs ${PACKAGE_JSON.engines.node}`,
      'run it through npm (`npm start`, `npm run doctor`), which puts the project\'s own Node.js 22 from node_modules/.bin first on PATH; run `npm install` if it is missing');
  }
}

/** Address and folders come from the environment; the config file is checked on its own. */
async function checkSettings(env: NodeJS.ProcessEnv, report: Report): Promise<Settings | undefined> {
  let settings: Settings;
  try {
    settings = loadSettings(env, { readConfig: false });
  } catch (error) {
    if (!(error instanceof SettingsError)) throw error;
    report.line('FAIL', `settings: ${error.message}`, 'correct or unset that variable');
    return undefined;
  }
  const portTaken = settings.port !== 0 && ['127.0.0.1', 'localhost'].includes(settings.host) && !(await portIsFree(settings.port));
  report.line(portTaken ? 'warn' : 'ok', `service address: http://${settings.host}:${settings.port}${portTaken ? ' (in use right now)' : ''}`,
    portTaken ? '`npm start` fails while another process holds it (fine if that is this service); set DEVBOX_PORT to move it' : undefined);
  report.line(writableLevel(settings.manifestsDir), `manifests dir: ${settings.manifestsDir}${existsNote(settings.manifestsDir)}`,
    writableLevel(settings.manifestsDir) === 'FAIL' ? 'make it writable, or point DEVBOX_MANIFESTS_DIR elsewhere' : undefined);
  report.line(writableLevel(settings.dataDir), `data dir: ${settings.dataDir}${existsNote(settings.dataDir)}`,
    writableLevel(settings.dataDir) === 'FAIL' ? 'make it writable, or point DEVBOX_DATA_DIR elsewhere' : undefined);
  return settings;
}

function existsNote(dir: string): string {
  return existsSync(dir) ? '' : ' (created at start)';
}

/** A folder is usable when it, or the closest folder above it that exists, is writable. */
function writableLevel(dir: string): Level {
  let at = dir;
  while (!existsSync(at) && dirname(at) !== at) at = dirname(at);
  try {
    accessSync(at, constants.W_OK | constants.X_OK);
    return 'ok';
  } catch {
    return 'FAIL';
  }
}

function checkConfig(env: NodeJS.ProcessEnv, report: Report): Config | undefined {
  const file = configFileFrom(env);
  try {
    const config = loadConfig(file);
    const where = !file ? 'built-in defaults (DEVBOX_CONFIG is not set and there is no ./devbox.config.yaml)'
      : `${file}${env.DEVBOX_CONFIG ? '' : ' (DEVBOX_CONFIG is not set)'} is valid`;
    report.line('ok', `config: ${where}; editor ports ${config.ports.min}-${config.ports.max}`);
    return config;
  } catch (error) {
    if (!(error instanceof SettingsError)) throw error;
    report.line('FAIL', `config: ${error.message}`, env.DEVBOX_CONFIG
      ? 'correct the file (see schemas/config.schema.json), or unset DEVBOX_CONFIG'
      : 'correct the file (see schemas/config.schema.json); the lines above say where');
    return undefined;
  }
}

/** An invalid manifest does not stop the service, but its server is left alone until fixed. */
async function checkManifests(settings: Settings, report: Report): Promise<void> {
  const ns = manifestsNamespace(settings.runtime);
  if (ns !== undefined) {
    report.line('ok', `manifests: the EditorServer objects of namespace ${ns}, not a folder (the API server validates them: kubectl get eds -n ${ns})`);
    return;
  }
  const store = new ManifestStore(settings.manifestsDir);
  const reads = await Promise.all((await store.list()).map((name) => store.read(name)));
  const invalid = reads.filter((r) => r.kind === 'invalid');
  if (invalid.length === 0) {
    report.line('ok', `manifests: ${reads.length} valid`);
    return;
  }
  report.line('warn', `manifests: ${invalid.length} of ${reads.length} invalid; the controller leaves their servers as they are`,
    'correct these files (see schemas/editorserver.schema.json)');
  for (const read of invalid) {
    if (read.kind === 'invalid') report.info(`${store.fileOf(read.name)}: ${read.errors.join('; ')}`);
  }
}

function checkEditorBinary(env: NodeJS.ProcessEnv, report: Report): EditorBinary | undefined {
  let editor: EditorBinary;
  try {
    editor = resolveEditorBinary(env);
  } catch (error) {
    if (!(error instanceof EditorNotFoundError)) throw error;
    report.line('FAIL', `editor binary: ${error.message}`,
      env.DEVBOX_EDITOR_BIN ? 'point DEVBOX_EDITOR_BIN at an executable code-server, or unset it' : 'run `npm install`');
    return undefined;
  }
  const installed = installedEditorPath(env);
  const why = {
    DEVBOX_EDITOR_BIN: 'DEVBOX_EDITOR_BIN is set',
    installed: `the pinned code-server ${PACKAGE_JSON.devbox.codeServer} that \`npm install\` put in the cache${builtWithoutKerberos(installed)
      ? ', built without its kerberos module: a proxy that asks for Kerberos authentication cannot be passed' : ''}`,
    PATH: `code-server found on PATH; the pinned copy (${installed}) is not installed`,
  }[editor.source];
  report.line(editor.source === 'PATH' ? 'warn' : 'ok', `editor binary: ${editor.path} (${why})`,
    editor.source === 'PATH' ? `run \`npm install\` to use the pinned code-server ${PACKAGE_JSON.devbox.codeServer}` : undefined);
  return editor;
}

/** scripts/install-editor.mjs notes in its completion mark when libkrb5's headers could not be had. */
function builtWithoutKerberos(launcher: string): boolean {
  try {
    return readFileSync(join(dirname(dirname(launcher)), '.complete'), 'utf8').includes('without kerberos');
  } catch {
    return false;
  }
}

/** `--version` proves the binary runs at all (and, for code-server, that its Node.js fits). */
async function checkEditorVersion(editor: EditorBinary, env: NodeJS.ProcessEnv, report: Report): Promise<boolean> {
  // Its own config file, in a throw-away folder: code-server reads (and first writes) one even
  // for --version, by default ~/.config/code-server/config.yaml.
  const dir = await mkdtemp(join(tmpdir(), 'devbox-doctor-version-'));
  const config = join(dir, 'config.yaml');
  let result;
  try {
    await writeEditorConfig(config);
    result = await execa(editor.path, ['--version', '--config', config], {
      env: editorEnvironment(env, 'doctor'),
      extendEnv: false,
      reject: false,
      all: true,
      stdin: 'ignore',
      timeout: 30_000,
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const output = String(result.all ?? '').trim();
  if (result.exitCode !== 0 || output === '') {
    report.line('FAIL', `editor version: \`${editor.path} --version\` failed: ${lastLine(output) || result.shortMessage}`,
      editor.source === 'installed' ? `remove ${dirname(dirname(editor.path))} and run \`npm install\` again` : 'check that this is a working code-server');
    return false;
  }
  const version = output.split('\n')[0];
  const pinned = version.startsWith(PACKAGE_JSON.devbox.codeServer);
  report.line(pinned ? 'ok' : 'warn', `editor version: ${version}`,
    pinned ? undefined : `the project is tested with code-server ${PACKAGE_JSON.devbox.codeServer}`);
  return true;
}

/**
 * Launches the editor exactly as the service does (ProcessWorkload, same arguments and folders
 * layout) on a free loopback port, waits for /healthz, then stops its whole process group.
 */
async function checkEditorStarts(editor: EditorBinary, config: Config, env: NodeJS.ProcessEnv, report: Report): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'devbox-doctor-'));
  const layout = new DataLayout(root);
  const stdoutPath = join(root, 'editor.out.log');
  const stderrPath = join(root, 'editor.err.log');
  const runtime = new ProcessWorkload({ bin: editor.path, layout, outputOf: () => ({ stdout: stdoutPath, stderr: stderrPath }), env });
  let ref: RuntimeRef | undefined;
  let exited: string | undefined;
  const name = 'doctor';
  runtime.onChange(() => {
    const seen = ref && runtime.state(name, ref);
    if (seen?.state === 'exited' && seen.exit) exited = seen.exit.signal ? `was killed by ${seen.exit.signal}` : `exited with code ${seen.exit.code}`;
  });
  const graceMs = config.editor.stopGraceSeconds * 1000;
  const cleanUp = async () => {
    if (ref) await runtime.stop(name, ref, graceMs);
    runtime.dispose();
  };
  // Ctrl-C while waiting must not leave an editor behind.
  const onSignal = () => void cleanUp().finally(() => rm(root, { recursive: true, force: true })).finally(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const port = await freePort();
    const timeoutMs = config.editor.readyTimeoutSeconds * 1000;
    const started = performance.now();
    try {
      ref = (await runtime.start({ name, port })).ref;
    } catch (error) {
      report.line('FAIL', `editor start: could not launch ${editor.path}: ${(error as Error).message}`, 'check that the file is a working code-server');
      return;
    }
    const healthy = await waitHealthy(port, Date.now() + timeoutMs, () => exited !== undefined);
    const seconds = ((performance.now() - started) / 1000).toFixed(2);
    if (!healthy) {
      const why = exited ? `the editor ${exited}` : `GET /healthz on port ${port} did not answer 200 within ${timeoutMs / 1000} s`;
      report.line('FAIL', `editor start: ${why}`, exited
        ? 'read the editor output below'
        : 'read the editor output below; raise editor.readyTimeoutSeconds in the config if the machine is only slow');
      await printTail(report, stdoutPath, stderrPath);
    } else {
      const health = await checkHealth(port);
      report.line('ok', `editor start: GET /healthz on 127.0.0.1:${port} answered 200${health.state ? ` (${health.state})` : ''} after ${seconds} s`);
    }
    const pid = pidOf(ref)!;
    const stopStarted = performance.now();
    await cleanUp();
    ref = undefined;
    const stopSeconds = ((performance.now() - stopStarted) / 1000).toFixed(2);
    if (groupExists(pid)) {
      report.line('FAIL', `editor stop: process group ${pid} is still alive after SIGTERM and SIGKILL`, `kill it by hand (kill -KILL -- -${pid}) and report this`);
    } else {
      report.line('ok', `editor stop: process group ${pid} gone after ${stopSeconds} s`);
    }
  } finally {
    await cleanUp();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await rm(root, { recursive: true, force: true });
  }
}

/** A port nothing listens on right now: bind port 0 on loopback, read it, let it go. */
function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolvePort(port));
    });
  });
}

async function printTail(report: Report, ...files: string[]): Promise<void> {
  for (const file of files) {
    const lines = (await readFile(file, 'utf8').catch(() => '')).trimEnd().split('\n').filter(Boolean).slice(-10);
    for (const line of lines) report.info(`| ${line}`);
  }
}

function lastLine(text: string): string {
  return text.split('\n').filter(Boolean).pop() ?? '';
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exit(await runDoctor());
}
