// `npm run bench -- compare <base-ref> [options]`: the service of another commit (base) against
// this checkout's (head, uncommitted changes included), measured alternately in one run. The base
// is checked out into a temporary worktree (node_modules linked to this checkout's), compiled, and
// removed at the end, also when the run fails or is interrupted. Each build's service, and its
// stub editor, run from its own checkout; the measuring code is this checkout's.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { resolveEditorBinary } from '../src/runtime/editor-binary.ts';
import { benchList, benchMemorySoak, benchStartLatency } from './core.ts';
import { buildService, closeBenchServices, round, ROOT, STUB_EDITOR } from './harness.ts';
import { benchProxyOnEditor } from './service-proxy.ts';
import { benchEditorStream } from './editor-stream.ts';

export const COMPARE_USAGE = `npm run bench -- compare <base-ref> [--rounds 3] [--servers 30] [--requests 5000]
  [--starts 5] [--proxy-seconds 8] [--soak-minutes 2] [--figures start,list,proxy,websocket,memory]`;

interface Options { rounds: number; servers: number; requests: number; starts: number; proxySeconds: number; soakMinutes: number }
interface Build { name: 'base' | 'head'; label: string; checkout: string; stub: string }
type Result = Record<string, any>;

interface Figure {
  name: string;
  unit: string;
  better: 'lower' | 'higher';
  /** Compared by difference in its unit, not by ratio (a growth near zero), at least `tolerance` apart. */
  absolute?: boolean;
  read(result: Result, options: Options): number;
}

interface Group { run(build: Build, options: Options): Promise<Result>; figures: Figure[] }

const GROUPS: Record<string, Group> = {
  start: {
    run: (b, o) => benchStartLatency(resolveEditorBinary().path, 'code-server', o.starts, 1, b.checkout),
    figures: [
      { name: 'start → running, POST /start, real code-server, median', unit: ' ms', better: 'lower', read: (r) => r.service_median_ms },
      { name: 'the same ÷ a direct spawn in the same round', unit: '×', better: 'lower', read: (r) => r.ratio },
    ],
  },
  list: {
    run: (b, o) => benchList(b.stub, o.servers, o.requests, 2, o.servers, b.checkout),
    figures: [
      { name: 'GET /servers p50, running editors as --servers', unit: ' ms', better: 'lower', read: (r) => r.p50_ms },
      { name: 'GET /servers p95', unit: ' ms', better: 'lower', read: (r) => r.p95_ms },
    ],
  },
  proxy: {
    run: (b, o) => benchProxyOnEditor(b.stub, 'stub', o.proxySeconds, 4, { checkout: b.checkout }),
    figures: [
      { name: 'proxy throughput, stub 1 KB page, 32 connections', unit: ' req/s', better: 'higher', read: (r) => r.proxyRequestsPerSec },
      { name: 'the same ÷ direct to the editor', unit: '×', better: 'higher', read: (r) => r.throughputRatio },
      { name: 'service CPU per proxied request', unit: ' µs', better: 'lower', read: (r) => r.serviceCpuPerRequestUs },
    ],
  },
  websocket: {
    run: (b) => benchEditorStream(b.stub, 5, 3, b.checkout),
    figures: [
      { name: 'VS Code messages (4 KB) echoed through the proxy, one socket', unit: ' MB/s', better: 'higher', read: (r) => r.proxy_mb_per_sec },
      { name: 'the same ÷ direct to the editor', unit: '×', better: 'higher', read: (r) => r.ratio },
    ],
  },
  memory: {
    run: (b, o) => benchMemorySoak(b.stub, o.servers, o.soakMinutes, 3, b.checkout),
    figures: [
      { name: 'service RSS right after starting --servers editors', unit: ' MB', better: 'lower', read: (r) => r.rss_start_mb },
      // Once the service's CPU is quiet after the starts (both builds measured by this checkout's bench).
      { name: 'service RSS at rest, running editors as --servers', unit: ' MB', better: 'lower', read: (r) => r.rss_rest_mb },
      { name: 'RSS growth over the churn soak', unit: ' MB', better: 'lower', absolute: true, read: (r) => round(r.rss_end_mb - r.rss_start_mb, 1) },
      // Beside the growth: a build that starts lower grows more to the same end (the churn's own working set).
      { name: 'service RSS at the end of the churn soak', unit: ' MB', better: 'lower', read: (r) => r.rss_end_mb },
      { name: 'churn cycles a minute (20 lists, a stop and a start)', unit: '', better: 'higher', read: (r, o) => round(r.cycles / o.soakMinutes, 1) },
    ],
  },
};

const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

/** A detached worktree of `commit` under the temporary folder, with this checkout's node_modules linked in. */
function checkOut(commit: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'devbox-bench-base-'));
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    rmSync(join(dir, 'node_modules'), { force: true }); // the link only, before anything walks the folder
    try {
      git('worktree', 'remove', '--force', dir);
    } catch {
      rmSync(dir, { recursive: true, force: true });
      git('worktree', 'prune');
    }
  };
  try {
    git('worktree', 'add', '--detach', dir, commit);
    symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(dir, 'node_modules'), 'dir');
  } catch (err) {
    remove();
    throw err;
  }
  return { dir, remove };
}

const midpoint = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const half = sorted.length >> 1;
  return sorted.length % 2 ? sorted[half] : (sorted[half - 1] + sorted[half]) / 2;
};

/**
 * Base and head side by side: their medians over the rounds, head ÷ base, the noise (the widest
 * spread between rounds of one build, relative or, for an absolute figure, in its unit) and the
 * verdict: a regression when head is worse than base by more than that noise.
 */
export function judge(figure: Figure, base: number[], head: number[]) {
  const [b, h] = [midpoint(base), midpoint(head)];
  const spread = (v: number[]) => (Math.max(...v) - Math.min(...v)) / (figure.absolute ? 1 : Math.abs(midpoint(v)) || 1);
  const noise = Math.max(spread(base), spread(head));
  const change = figure.absolute ? h - b : h / b - 1;
  const worse = figure.better === 'lower' ? change : -change;
  // Below these, a difference means nothing here, however steady the rounds were.
  const tolerance = Math.max(noise, figure.absolute ? 1 : 0.02);
  const oneRound = Math.min(base.length, head.length) < 2;
  const verdict = oneRound ? 'no noise estimate (1 round)'
    : worse > tolerance ? 'REGRESSION' : -worse > tolerance ? 'better' : 'same, within noise';
  return {
    base_median: round(b, 3), head_median: round(h, 3), ratio: Math.abs(b) > 1e-9 ? round(h / b, 3) : undefined,
    noise: oneRound ? '—' : figure.absolute ? `${round(noise, 1)}${figure.unit}` : `${round(noise * 100, 1)} %`, verdict,
  };
}

function parse(args: string[]): { ref: string; options: Options; groups: string[] } {
  const { positionals, values } = parseArgs({
    args, allowPositionals: true,
    options: {
      rounds: { type: 'string', default: '3' }, servers: { type: 'string', default: '30' }, requests: { type: 'string', default: '5000' },
      starts: { type: 'string', default: '5' }, 'proxy-seconds': { type: 'string', default: '8' }, 'soak-minutes': { type: 'string', default: '2' },
      figures: { type: 'string', default: Object.keys(GROUPS).join(',') },
    },
  });
  const groups = values.figures.split(',').filter(Boolean);
  const unknown = groups.filter((g) => !(g in GROUPS));
  if (positionals.length !== 1 || unknown.length > 0) throw new Error(`${unknown.length ? `unknown figures: ${unknown.join(', ')}\n` : ''}usage: ${COMPARE_USAGE}`);
  const options = {
    rounds: Number(values.rounds), servers: Number(values.servers), requests: Number(values.requests), starts: Number(values.starts),
    proxySeconds: Number(values['proxy-seconds']), soakMinutes: Number(values['soak-minutes']),
  };
  for (const [name, value] of Object.entries(options)) if (!(value > 0)) throw new Error(`--${name}: a positive number, not ${value}`);
  return { ref: positionals[0], options, groups };
}

export async function compareBuilds(args: string[]): Promise<void> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(args);
  } catch (err) {
    console.error((err as Error).message);
    process.exitCode = 2;
    return;
  }
  const { ref, options, groups } = parsed;
  let commit: string;
  try {
    commit = git('rev-parse', '--verify', '--quiet', `${ref}^{commit}`);
  } catch {
    console.error(`not a commit here: ${ref}`);
    process.exitCode = 2;
    return;
  }
  let busy = '';
  try { busy = execFileSync('pgrep', ['-f', '.ci/run'], { encoding: 'utf8' }).trim(); } catch { /* none running */ }
  if (busy) console.warn(`warning: .ci/run is running (pids ${busy.split('\n').join(', ')}): the figures will be noisy`);

  const base = checkOut(commit);
  // Interrupted: stop the services and their editors first; the base checkout goes on exit.
  const onSignal = (signal: NodeJS.Signals) => {
    console.error(`\n${signal}: stopping the services, removing the base checkout`);
    void closeBenchServices().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('exit', base.remove);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const stubOf = (checkout: string) => (existsSync(join(checkout, 'test/fixtures/stub-editor.mjs')) ? join(checkout, 'test/fixtures/stub-editor.mjs') : STUB_EDITOR);
    const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
    const builds: Build[] = [
      { name: 'base', label: `${ref} (${commit.slice(0, 10)})`, checkout: base.dir, stub: stubOf(base.dir) },
      { name: 'head', label: `${git('rev-parse', '--short=10', 'HEAD')}${dirty ? ' + uncommitted changes' : ''}`, checkout: ROOT, stub: STUB_EDITOR },
    ];
    for (const build of builds) buildService(build.checkout);
    console.log(`compare: base ${builds[0].label} against head ${builds[1].label}; ${JSON.stringify({ ...options, figures: groups })}`);

    const results: Record<string, Record<string, Result[]>> = {};
    for (let r = 0; r < options.rounds; r++) {
      // The order alternates each round, so drift over the run falls on both builds alike.
      const order = r % 2 === 0 ? builds : [...builds].reverse();
      for (const group of groups) {
        for (const build of order) {
          const started = performance.now();
          const result = await GROUPS[group].run(build, options);
          ((results[group] ??= {})[build.name] ??= []).push(result);
          const figures = GROUPS[group].figures.map((f) => `${f.read(result, options)}${f.unit}`).join(', ');
          console.log(`round ${r + 1}/${options.rounds} ${group} ${build.name}: ${figures} (${round((performance.now() - started) / 1000, 1)} s)`);
        }
      }
    }

    const rows = groups.flatMap((group) => GROUPS[group].figures.map((figure) => {
      const series = (name: string) => results[group][name].map((result) => figure.read(result, options));
      return { figure: figure.name, unit: figure.unit.trim(), better: figure.better, base_rounds: series('base'), head_rounds: series('head'), ...judge(figure, series('base'), series('head')) };
    }));
    const table = ['| figure | base median | head median | head ÷ base | noise between rounds | verdict |', '|---|---|---|---|---|---|',
      ...rows.map((row) => `| ${row.figure} (${row.unit || 'count'}, ${row.better} is better) | ${row.base_median} | ${row.head_median} | ${row.ratio ?? '—'} | ${row.noise} | ${row.verdict} |`)];
    console.log(`\n## head ${builds[1].label} against base ${builds[0].label}, ${options.rounds} round(s)\n${table.join('\n')}`);
    console.log(`\n## summary\n${JSON.stringify({ base: builds[0].label, head: builds[1].label, options, rows })}`);
    if (rows.some((row) => row.verdict === 'REGRESSION')) process.exitCode = 1;
  } finally {
    base.remove();
  }
}
