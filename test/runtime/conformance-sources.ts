// The workspace sources every runtime's conformance harness offers: a git repository served by
// `git daemon` on loopback and a ZIP on disk, each with one file and its content.
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeRepo, serveGitDaemon } from '../workspace/git-fixtures.ts';
import { buildZip } from '../workspace/zip-fixtures.ts';
import type { Harness } from './conformance.ts';

export interface ConformanceSources {
  git: Harness['sources']['git'];
  zip: Harness['sources']['zip'];
  stop(): Promise<void>;
}

export async function conformanceSources(): Promise<ConformanceSources> {
  const repos = await fs.mkdtemp(join(tmpdir(), 'devbox-conformance-repos-'));
  await makeRepo(repos, 'project');
  const daemon = await serveGitDaemon(repos);
  const zip = buildZip([{ name: 'hello.txt', data: 'hello from a zip\n' }, { name: 'docs/notes.md', data: '# notes\n' }]);
  const zipPath = join(repos, 'source.zip');
  await fs.writeFile(zipPath, zip);
  const sha256 = createHash('sha256').update(zip).digest('hex');
  return {
    git: { source: { git: { url: daemon.url('project') }, schemes: ['git'], timeoutMs: 30_000 }, file: 'README.md', content: '# project\n' },
    zip: { source: { archive: { sha256, path: zipPath } }, file: 'hello.txt', content: 'hello from a zip\n' },
    async stop() {
      await daemon.stop();
      await fs.rm(repos, { recursive: true, force: true });
    },
  };
}
