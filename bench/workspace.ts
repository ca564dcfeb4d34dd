// Workspace sources through the running service against the plain tools: a 50 MB, 5,000-file
// ZIP through POST /servers/create-with-workspace against `unzip`, and a clone of a local
// repository (file://) through the same route against `git clone`. Each API figure includes the
// whole request: upload or clone, checks, the manifest, the controller and its answer.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import AdmZip from 'adm-zip';
import { benchPorts, median, round, startBenchService, type BenchService } from './harness.ts';

async function timed(work: () => Promise<unknown> | unknown): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

async function createWith(service: BenchService, name: string, fields: Record<string, string>, zip?: Buffer): Promise<void> {
  const form = new FormData();
  form.append('name', name);
  for (const [key, value] of Object.entries(fields)) form.append(key, value);
  if (zip) form.append('zip_file', new Blob([zip]), 'project.zip');
  const res = await fetch(`${service.url}/servers/create-with-workspace`, { method: 'POST', body: form });
  if (res.status !== 201) throw new Error(`create-with-workspace answered ${res.status}: ${await res.text()}`);
}

/** 5,000 files of 10 KiB: one in ten text (compressible like source code), the rest random. */
function buildProjectZip(files: number): Buffer {
  const zip = new AdmZip();
  const line = 'export function example(value: number): number { return value * 2; }\n';
  for (let i = 0; i < files; i++) {
    // Random bytes hardly compress, so the archive is about 50 MB like the files.
    const data = i % 10 === 0 ? Buffer.from(line.repeat(Math.ceil(10240 / line.length)).slice(0, 10240)) : randomBytes(10240);
    zip.addFile(`project/dir${i % 50}/file${i}.ts`, data);
  }
  return zip.toBuffer();
}

export async function benchExtract(editorBin: string, rounds: number, offset: number) {
  const root = await fs.mkdtemp(join(tmpdir(), 'devbox-bench-zip-'));
  const service = await startBenchService(editorBin, benchPorts(offset));
  try {
    const zip = buildProjectZip(5000);
    const file = join(root, 'project.zip');
    await fs.writeFile(file, zip);
    const direct: number[] = [];
    const via: number[] = [];
    const rssBefore = service.rssMb();
    let rssPeak = rssBefore;
    for (let i = 0; i < rounds; i++) {
      direct.push(await timed(() => execFileSync('unzip', ['-q', file, '-d', join(root, `out-${i}`)])));
      via.push(await timed(() => createWith(service, `zip ${i}`, {}, zip)));
      rssPeak = Math.max(rssPeak, service.rssMb());
    }
    return {
      zip_mb: round(zip.length / 1024 ** 2, 1), files: 5000, rounds,
      unzip_median_ms: round(median(direct)), api_median_ms: round(median(via)),
      ratio: round(median(via) / median(direct), 2),
      service_rss_mb: { before: round(rssBefore, 1), after: round(rssPeak, 1) },
    };
  } finally {
    await service.close();
    await fs.rm(root, { recursive: true, force: true });
  }
}

export async function benchClone(editorBin: string, rounds: number, offset: number) {
  const root = await fs.mkdtemp(join(tmpdir(), 'devbox-bench-git-'));
  const service = await startBenchService(editorBin, benchPorts(offset));
  try {
    const repo = join(root, 'repo');
    await fs.mkdir(repo);
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=b', '-c', 'user.email=b@example.invalid', ...args], { cwd: repo, stdio: 'pipe' });
    git('init', '-q');
    for (let i = 0; i < 2000; i++) {
      await fs.mkdir(join(repo, `dir${i % 40}`), { recursive: true });
      await fs.writeFile(join(repo, `dir${i % 40}`, `file${i}.txt`), randomBytes(4096).toString('base64'));
    }
    git('add', '.');
    git('commit', '-q', '-m', 'bench');
    const url = `file://${repo}`;
    const direct: number[] = [];
    const via: number[] = [];
    for (let i = 0; i < rounds; i++) {
      direct.push(await timed(() => execFileSync('git', ['clone', '-q', '--', url, join(root, `clone-${i}`)], { stdio: 'pipe' })));
      via.push(await timed(() => createWith(service, `clone ${i}`, { github_url: url })));
    }
    return {
      files: 2000, rounds,
      git_clone_median_ms: round(median(direct)), api_median_ms: round(median(via)),
      ratio: round(median(via) / median(direct), 2),
    };
  } finally {
    await service.close();
    await fs.rm(root, { recursive: true, force: true });
  }
}
