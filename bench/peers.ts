// restic and borg, the backup tools the persistence bench compares snapshots with
// (bench/persistence.ts): installed from Debian's packages when missing, each run with its
// repository, cache and configuration in a folder of its own, so runs are independent and
// leave nothing behind. Both are run as a person would, with their commands (their start-up
// is part of their figures), without compression (the project and tar store bytes as they
// are), restic encrypted (it cannot be turned off), borg unencrypted (`--encryption=none`: it
// still checks every chunk with its id and every segment entry with a CRC).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

/** A backup tool measured beside the project: a first backup, one after a change, a restore. */
export interface Peer {
  name: 'restic' | 'borg';
  version: string;
  /** Backs up every file under `tree` as a new snapshot (the second and later ones as increments of the one before). */
  backup(tree: string): void;
  /** Writes the latest snapshot's files into the empty folder `target`. */
  restore(target: string): void;
}

export type Peers = { peers: Peer[]; skipped: Array<{ name: string; why: string }> };

const TOOLS = [{ name: 'restic', command: 'restic', pkg: 'restic' }, { name: 'borg', command: 'borg', pkg: 'borgbackup' }] as const;

const has = (command: string) => spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;

/**
 * Installs the tools that are missing with apt-get (saying so), and answers which can be
 * measured: a tool that cannot be installed is skipped with the reason, the bench goes on.
 */
export function ensurePeers(): { ready: Array<(typeof TOOLS)[number]>; skipped: Array<{ name: string; why: string }> } {
  const missing = TOOLS.filter((tool) => !has(tool.command));
  const skipped: Array<{ name: string; why: string }> = [];
  if (missing.length > 0) {
    const pkgs = missing.map((tool) => tool.pkg);
    let why: string | undefined;
    if (process.getuid?.() !== 0) {
      why = `not installed, and the bench is not root to install it: apt-get install -y ${pkgs.join(' ')}`;
    } else {
      console.error(`[bench persistence] installing ${pkgs.join(' and ')} from Debian's packages (apt-get install)`);
      const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
      const install = () => spawnSync('apt-get', ['install', '-y', '-q', '--no-install-recommends', ...pkgs], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      let result = install();
      if (result.status !== 0) {
        // Package lists not fetched yet (a fresh machine): once, then again.
        spawnSync('apt-get', ['update', '-q'], { env, stdio: 'ignore' });
        result = install();
      }
      if (result.status !== 0) why = `apt-get install ${pkgs.join(' ')} failed: ${(result.stderr || result.stdout || result.error?.message || '').trim().split('\n').at(-1)}`;
    }
    for (const tool of missing) if (!has(tool.command)) skipped.push({ name: tool.name, why: why ?? `${tool.command} is not on PATH after installing ${tool.pkg}` });
  }
  return { ready: TOOLS.filter((tool) => has(tool.command)), skipped };
}

/** Runs a tool's command with its environment; its output is read only on failure. */
function run(command: string, args: string[], env: NodeJS.ProcessEnv, cwd?: string): string {
  try {
    return execFileSync(command, args, { env, cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
  } catch (error) {
    const { stderr, stdout } = error as { stderr?: string; stdout?: string };
    throw new Error(`${command} ${args.join(' ')} failed: ${(stderr || stdout || (error as Error).message).trim().split('\n').slice(-3).join(' | ')}`);
  }
}

/** restic with a local repository under `dir`: each backup after the first names the one before as its parent. */
export function restic(dir: string): Peer {
  const repo = join(dir, 'repo');
  mkdirSync(join(dir, 'cache'), { recursive: true });
  const env = {
    ...process.env, RESTIC_REPOSITORY: repo, RESTIC_PASSWORD: 'bench', RESTIC_CACHE_DIR: join(dir, 'cache'),
    // No other configuration of the machine's user, no progress output.
    XDG_CACHE_HOME: join(dir, 'cache'), HOME: dir, RESTIC_PROGRESS_FPS: '0.1',
  };
  const version = run('restic', ['version'], env).trim();
  // Repository format 2 is the one with compression, so it can be turned off (format 1 has none).
  run('restic', ['init', '--repository-version', '2'], env);
  let parent: string | undefined;
  return {
    name: 'restic', version,
    backup(tree) {
      const out = run('restic', ['backup', '--json', '--quiet', '--compression', 'off', '--host', 'bench', ...(parent ? ['--parent', parent] : []), '.'], env, tree);
      const summary = out.split('\n').filter((line) => line.includes('"summary"')).map((line) => JSON.parse(line)).at(-1);
      if (!summary?.snapshot_id) throw new Error(`restic backup gave no snapshot id: ${out.slice(-300)}`);
      parent = summary.snapshot_id as string;
    },
    restore(target) {
      run('restic', ['restore', parent!, '--target', target], env);
    },
  };
}

/** borg with an unencrypted repository under `dir`: each backup is a new archive in it (its files cache skips unchanged files). */
export function borg(dir: string): Peer {
  const repo = join(dir, 'repo');
  const env = {
    ...process.env, BORG_REPO: repo, BORG_PASSPHRASE: '', BORG_BASE_DIR: dir,
    BORG_CACHE_DIR: join(dir, 'cache'), BORG_CONFIG_DIR: join(dir, 'config'), BORG_SECURITY_DIR: join(dir, 'security'),
    BORG_KEYS_DIR: join(dir, 'keys'), BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK: 'yes', BORG_RELOCATED_REPO_ACCESS_IS_OK: 'yes', HOME: dir,
  };
  const version = run('borg', ['--version'], env).trim();
  run('borg', ['init', '--encryption=none'], env);
  let archives = 0;
  return {
    name: 'borg', version,
    backup(tree) {
      run('borg', ['create', '--compression', 'none', `::a${++archives}`, '.'], env, tree);
    },
    restore(target) {
      run('borg', ['extract', `::a${archives}`], env, target);
    },
  };
}

export const PEERS = { restic, borg } as const;
