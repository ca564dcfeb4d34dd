// Installs VS Code extensions into one editor's extensions folder with code-server's own CLI.
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { extensionName, findVsix, installedExtensions, isVsixPath, pinnedVersion } from './extensions-folder.ts';
import { editorEnvironment } from '../core/child-env.ts';
import { writeEditorConfig } from '../core/editor-config.ts';

export interface InstallOutcome {
  ok: boolean;
  version?: string;
  message?: string;
  /** The install was cancelled (its signal aborted) and its process ended: nothing to record. */
  cancelled?: boolean;
}

/** One editor's folders; configPath is its own code-server config (never ~/.config/code-server). */
export interface InstallTarget {
  /** The server's manifest name. */
  name: string;
  extensionsDir: string;
  userDataDir: string;
  configPath: string;
}

export interface ExtensionInstaller {
  /** Installs one extension; aborting the signal ends the install's process. */
  install(target: InstallTarget, id: string, signal?: AbortSignal): Promise<InstallOutcome>;
  /** Uninstalls one extension (by publisher.name). */
  uninstall(target: InstallTarget, id: string, signal?: AbortSignal): Promise<InstallOutcome>;
  /** What really is in the extensions folder: lower-case publisher.name → version. */
  installed(target: InstallTarget): Promise<Map<string, string | undefined>>;
}

export class CodeServerExtensionInstaller implements ExtensionInstaller {
  private readonly bin: string;
  private readonly timeoutMs: number;

  private readonly vsixDir: string | undefined;

  /** vsixDir (DEVBOX_VSIX_DIR): .vsix files looked at before the marketplace, for air-gapped machines. */
  constructor(bin: string, timeoutMs = 180_000, vsixDir = process.env.DEVBOX_VSIX_DIR || undefined) {
    this.bin = bin;
    this.timeoutMs = timeoutMs;
    this.vsixDir = vsixDir;
  }

  async install(target: InstallTarget, id: string, signal?: AbortSignal): Promise<InstallOutcome> {
    const local = this.vsixDir ? await findVsix(this.vsixDir, id) : undefined;
    // A version the spec pins (id@1.2.3, or a .vsix file) replaces whichever is installed:
    // without --force code-server refuses a downgrade, exiting 0 all the same.
    const pinned = pinnedVersion(id) !== undefined || isVsixPath(id) || local !== undefined;
    return this.run(target, ['--install-extension', local ?? id, ...(pinned ? ['--force'] : [])], signal, judgeInstall);
  }

  async uninstall(target: InstallTarget, id: string, signal?: AbortSignal): Promise<InstallOutcome> {
    return this.run(target, ['--uninstall-extension', extensionName(id)], signal, judgeUninstall);
  }

  installed(target: InstallTarget): Promise<Map<string, string | undefined>> {
    return installedExtensions(target.extensionsDir);
  }

  private async run(
    target: InstallTarget, action: string[], signal: AbortSignal | undefined,
    judge: (code: number | undefined, output: string, fallback?: string) => InstallOutcome,
  ): Promise<InstallOutcome> {
    // Loaded on first use: most starts install nothing, and execa is not small.
    const { execa } = await import('execa');
    await mkdir(dirname(target.configPath), { recursive: true });
    await writeEditorConfig(target.configPath);
    const result = await execa(this.bin, [
      '--config', target.configPath,
      '--extensions-dir', target.extensionsDir,
      '--user-data-dir', target.userDataDir,
      ...action,
    ], {
      timeout: this.timeoutMs, reject: false, all: true, stdin: 'ignore',
      // A spec change or a delete aborts the signal: SIGTERM, then SIGKILL if it lingers.
      ...(signal ? { cancelSignal: signal, forceKillAfterDelay: 2000 } : {}),
      // The environment an editor gets: none of the service's secrets reach code-server's CLI either.
      env: editorEnvironment(process.env, target.name), extendEnv: false,
    });
    if (result.isCanceled) return { ok: false, cancelled: true };
    return judge(result.exitCode, (result.all ?? '').toString(), result.shortMessage);
  }
}

/** An uninstall succeeded when code-server says so, or that the extension is not there. */
export function judgeUninstall(exitCode: number | undefined, output: string, fallback?: string): InstallOutcome {
  return exitCode === 0 && /successfully uninstalled|is not installed/i.test(output) ? { ok: true } : judgeInstall(exitCode, output, fallback);
}

/**
 * An install succeeded when code-server exits 0 and says so ("was successfully installed", or
 * "is already installed"). Words like "error" in the output prove nothing: an extension may be
 * called usernamehw.errorlens.
 */
export function judgeInstall(exitCode: number | undefined, output: string, fallback?: string): InstallOutcome {
  if (exitCode === 0 && /successfully installed|is already installed/i.test(output)) {
    const version = /\bv(\d+\.\d+\.\d+[^\s']*)/.exec(output)?.[1];
    return version ? { ok: true, version } : { ok: true };
  }
  const lines = output.split('\n').map((l) => l.trim()).filter((l) => l && l !== 'Installing extensions...');
  const reason = lines.pop() ?? fallback ?? `code-server exited with code ${exitCode}`;
  return { ok: false, message: reason.slice(0, 500) };
}
