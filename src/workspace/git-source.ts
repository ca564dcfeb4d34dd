// Git workspace sources: which URLs are allowed, and cloning one into an empty workspace.
// A URL is untrusted input that reaches git's command line, so it is checked before anything is
// written (the API answers 400), passed after `--`, and git itself is limited to the allowed
// transports (GIT_ALLOW_PROTOCOL), never prompts, and is killed after a timeout.
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { simpleGit as SimpleGitFactory } from 'simple-git';

let simpleGitModule: Promise<typeof SimpleGitFactory> | undefined;
/** simple-git, loaded on the first git command rather than at start (it holds about 1.2 MB of heap). */
export function loadSimpleGit(): Promise<typeof SimpleGitFactory> {
  simpleGitModule ??= import('simple-git').then((module) => module.simpleGit);
  return simpleGitModule;
}

export interface GitSource {
  url: string;
  ref?: string;
  depth?: number;
}

/** Schemes allowed when the config names none: http and file only locally (no identity required). */
export function defaultGitSchemes(localMode: boolean): string[] {
  return localMode ? ['https', 'ssh', 'git', 'http', 'file'] : ['https', 'ssh', 'git'];
}

/** The URL schemes git sources may use: the config's `workspace.gitSchemes`, else the mode's defaults. The one place this rule is written. */
export function allowedGitSchemes(workspace: { gitSchemes?: string[] } | undefined, localMode: boolean): string[] {
  return workspace?.gitSchemes ?? defaultGitSchemes(localMode);
}

/** Why git may not be given this URL (what to change), or undefined when it may. */
export function gitUrlProblem(url: string, schemes: readonly string[]): string | undefined {
  const allowed = `use a URL with one of: ${schemes.map((s) => `${s}://`).join(', ')}`;
  if (url.length === 0 || url.length > 2048) return 'the git URL must be 1 to 2048 characters';
  if (url.startsWith('-')) return `the git URL "${url}" starts with "-", which git would read as an option: ${allowed}`;
  // git's "<transport>::<address>" syntax (ext::, fd::) runs commands or reads descriptors.
  const transport = /^([A-Za-z][A-Za-z0-9+.-]*)::/.exec(url);
  if (transport) return `the git transport "${transport[1]}::" is not allowed: ${allowed}`;
  // eslint-disable-next-line no-control-regex
  if (/[\s\x00-\x1f\x7f]/.test(url)) return 'the git URL holds whitespace or control characters: remove them';
  let scheme: string;
  if (url.includes('://')) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return `the git URL "${url}" does not parse: ${allowed}`;
    }
    scheme = parsed.protocol.replace(/:$/, '');
    if (scheme !== 'file' && parsed.hostname === '') return `the git URL "${url}" names no host`;
    if (parsed.hostname.startsWith('-')) return `the git URL "${url}" has a host starting with "-": fix the host`;
  } else if (/^[A-Za-z0-9._~-]+@[A-Za-z0-9.-]+:[^:]/.test(url) && !url.split('@')[1].startsWith('-')) {
    scheme = 'ssh'; // scp-like user@host:path
  } else {
    return `the git URL "${url}" does not parse: ${allowed}`;
  }
  if (!schemes.includes(scheme)) return `the git scheme "${scheme}" is not allowed here: ${allowed}`;
  return undefined;
}

/** Environment for git: no prompts, only the allowed transports, nothing of the service's secrets. */
export function gitEnv(schemes: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of ['PATH', 'HOME', 'LANG', 'SSL_CERT_FILE', 'SSL_CERT_DIR', 'HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'https_proxy', 'http_proxy', 'no_proxy']) {
    if (process.env[key] !== undefined) env[key] = process.env[key]!;
  }
  return {
    ...env,
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: 'true',
    SSH_ASKPASS: 'true',
    GIT_SSH_COMMAND: 'ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new',
    // git itself refuses any other transport, whatever the URL turns into (redirects, submodules).
    GIT_ALLOW_PROTOCOL: schemes.join(':'),
  };
}

/**
 * Clones into a fresh folder beside the workspace, then moves what it holds in, so a failed or
 * cancelled clone leaves the workspace as it was: empty. Throws with git's own words.
 */
export async function cloneInto(
  workspace: string, source: GitSource, options: { schemes: readonly string[]; timeoutMs: number; signal: AbortSignal },
): Promise<void> {
  const problem = gitUrlProblem(source.url, options.schemes);
  if (problem) throw new Error(problem);
  const temp = join(dirname(workspace), `.${basename(workspace)}.clone-${randomBytes(4).toString('hex')}`);
  const args = ['clone', '--no-recurse-submodules', '--progress'];
  if (source.ref) args.push('--branch', source.ref);
  if (source.depth) args.push('--depth', String(source.depth));
  args.push('--', source.url, temp);
  try {
    // The timeout bounds the whole clone, not only a stall: simple-git kills git when it aborts.
    const abort = AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs)]);
    // The environment is this module's own fixed values (no prompts, allowed transports), not input.
    const env = gitEnv(options.schemes);
    const simpleGit = await loadSimpleGit();
    const git = simpleGit({
      baseDir: dirname(workspace), abort,
      allowEnvironment: Object.keys(env).filter((key) => key.startsWith('GIT_') || key.startsWith('SSH_')),
      unsafe: { allowUnsafeAskPass: true, allowUnsafeSshCommand: true },
    })
      .env(env);
    await git.raw(args);
    // The clone's entries move into the workspace folder itself, which keeps its inode, so a
    // running editor that has it open sees them. Only an empty workspace is filled.
    if ((await fs.readdir(workspace)).length > 0) throw new Error(`the workspace ${workspace} is not empty: nothing was cloned into it`);
    for (const entry of await fs.readdir(temp)) await fs.rename(join(temp, entry), join(workspace, entry));
    await fs.chmod(workspace, 0o700);
  } finally {
    await fs.rm(temp, { recursive: true, force: true });
  }
}
