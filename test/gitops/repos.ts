// Git repositories the GitOps tests push to: made in a temp folder, served by `git daemon` on
// loopback (test/workspace/git-fixtures.ts), changed by committing to main as a person would.
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { dirname, join } from 'node:path';

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.invalid', '-c', 'init.defaultBranch=main', ...args], { cwd, stdio: 'pipe' }).toString().trim();

/** A repository at base/name on main, with these files in its first commit. */
export async function makeGitRepo(base: string, name: string, files: Record<string, string>): Promise<string> {
  const dir = join(base, name);
  await fs.mkdir(dir, { recursive: true });
  git(dir, 'init', '-q');
  await commit(dir, files, 'first');
  return dir;
}

/** Writes (or, for null, removes) files and commits them to main; returns the new commit. */
export async function commit(dir: string, files: Record<string, string | null>, message = 'change'): Promise<string> {
  for (const [path, text] of Object.entries(files)) {
    if (text === null) {
      git(dir, 'rm', '-q', '--', path);
      continue;
    }
    await fs.mkdir(dirname(join(dir, path)), { recursive: true });
    await fs.writeFile(join(dir, path), text);
    git(dir, 'add', '--', path);
  }
  git(dir, 'commit', '-q', '--allow-empty', '-m', message);
  return head(dir);
}

export function head(dir: string): string {
  return git(dir, 'rev-parse', 'HEAD');
}

/** An EditorServer manifest as a person writes one. */
export function manifest(name: string, spec: { running: boolean; displayName?: string; settings?: Record<string, unknown> }): string {
  return [
    '# From the fleet repository.',
    'apiVersion: devbox.dev/v1alpha1',
    'kind: EditorServer',
    'metadata:',
    `  name: ${name}`,
    'spec:',
    `  displayName: ${spec.displayName ?? name}`,
    `  running: ${spec.running}`,
    ...(spec.settings ? [`  settings: ${JSON.stringify(spec.settings)}`] : []),
    '',
  ].join('\n');
}
