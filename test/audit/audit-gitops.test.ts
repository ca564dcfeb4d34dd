// A GitOps mirror's changes in the audit trail: it writes the manifests folder as the service does
// (its writes are no hand edits), so what a sync created, changed and deleted is recorded with the
// actor `git`, door `manifest`, and the spec fields it changed.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/audit/entry.ts';
import { commit, makeGitRepo, manifest } from '../gitops/repos.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';
import { serveGitDaemon, type GitDaemon } from '../workspace/git-fixtures.ts';

let base: string;
let repo: string;
let daemon: GitDaemon;
let service: TestService;

beforeAll(async () => {
  base = await fs.mkdtemp(join(tmpdir(), 'devbox-audit-gitops-'));
  // Another server stays: a folder the sync finds empty deletes nothing.
  repo = await makeGitRepo(join(base, 'repos'), 'fleet', {
    'servers/alpha.yaml': manifest('alpha', { running: false, displayName: 'Alpha' }),
    'servers/stays.yaml': manifest('stays', { running: false }),
  });
  daemon = await serveGitDaemon(join(base, 'repos'));
  service = await startTestService({ gitSync: { manifests: { url: daemon.url('fleet'), path: 'servers', intervalSeconds: 3600 } } });
});
afterAll(async () => {
  await service?.stop();
  await daemon?.stop();
  await fs.rm(base, { recursive: true, force: true });
});

const entries = async (): Promise<AuditEntry[]> => (await service.request('GET', '/audit?server=alpha&limit=500')).body.entries;
const shown = async () => (await entries()).map((e) => `${e.actor} ${e.door} ${e.action} ${e.detail ?? ''}`.trim()).reverse();

describe('a GitOps mirror in the audit trail', () => {
  it('records what each sync created, changed and deleted, as git', async () => {
    await eventually(async () => (await shown()).includes('git manifest create running: false'), 20_000);

    await commit(repo, { 'servers/alpha.yaml': manifest('alpha', { running: false, displayName: 'Alpha two' }) });
    expect((await service.request('POST', '/sync')).status).toBe(200);
    await eventually(async () => (await shown()).includes('git manifest edit spec: displayName'), 20_000);

    await commit(repo, { 'servers/alpha.yaml': null });
    expect((await service.request('POST', '/sync')).status).toBe(200);
    // The mark, or (when the controller was quicker than the read) the file gone.
    const deleted = /^git manifest delete (a deletion mark was set|the manifest was removed)$/;
    await eventually(async () => (await shown()).some((line) => deleted.test(line)), 20_000);
    // Nothing of it was taken for a hand edit, and nothing was recorded twice.
    const all = await shown();
    expect(all.slice(0, 2)).toEqual(['git manifest create running: false', 'git manifest edit spec: displayName']);
    expect(all).toHaveLength(3);
    expect(all[2]).toMatch(deleted);
  });
});
