// The audit trail's copies at the persistence target, over the store the snapshots use (a real
// folder store here): every rotated file is kept there as the chain goes on; a fresh data folder
// takes them back; and a target whose trail cannot be read at start is left untouched.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditArchive, type ArchiveStore } from '../../src/audit/archive.ts';
import { AuditLog } from '../../src/audit/audit-log.ts';
import { verifyAuditDir } from '../../src/audit/verify.ts';
import { FolderStore } from '../../src/persistence/folder-store.ts';

let root: string;
beforeEach(async () => {
  root = await fs.mkdtemp(join(tmpdir(), 'devbox-audit-archive-'));
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

const entry = (n: number) => ({ actor: 'local', door: 'api' as const, action: 'start', server_id: `id-${n}`, server_name: `s${n}`, outcome: 'ok' as const });

describe('the trail at the persistence target', () => {
  it('keeps every rotated file there, although the data folder keeps only the newest, and a fresh data folder goes on from them', async () => {
    const target = join(root, 'keep');
    await fs.mkdir(target);
    const store = new FolderStore(target);
    const archive = new AuditArchive(store, () => undefined);
    const dir = join(root, 'data', 'audit');
    const log = AuditLog.open({ dir, log: () => undefined, maxFileBytes: 1000, keepFiles: 1, onRotated: (path) => void archive.copy(path) });
    for (let n = 1; n <= 30; n++) log.record(entry(n));
    log.flush();
    await archive.copy(join(dir, 'audit.jsonl'));
    const last = log.state();
    log.close();

    const kept = (await fs.readdir(join(target, 'audit'))).filter((f) => f.endsWith('.jsonl'));
    const local = (await fs.readdir(dir)).filter((f) => f.endsWith('.jsonl'));
    expect(local.length).toBe(2);
    expect(kept.length).toBeGreaterThan(3);
    // The copy holds the whole chain, from the first entry.
    expect(await verifyAuditDir(join(target, 'audit'))).toMatchObject({ ok: true, first_seq: 1, last_seq: 30, last_hash: last.last_hash });
    expect((await verifyAuditDir(dir)).anchored_at).toBeDefined();

    const fresh = join(root, 'new-container', 'audit');
    await new AuditArchive(store, () => undefined).bringBack(fresh);
    const again = AuditLog.open({ dir: fresh, log: () => undefined });
    expect(again.record(entry(31))).toMatchObject({ seq: 31, prev: last.last_hash });
    again.close();
    expect(await verifyAuditDir(fresh)).toMatchObject({ ok: true, first_seq: 1, last_seq: 31 });
  });

  it('copies nothing in a run whose start could not read the trail kept at the target, so a new chain never replaces it', async () => {
    const target = join(root, 'keep');
    await fs.mkdir(target);
    const store = new FolderStore(target);
    await store.put('audit/audit.jsonl', Buffer.from('{"kept":"as it was"}\n'));
    const unreachable: ArchiveStore = { description: store.description, put: (...a) => store.put(...a), get: (...a) => store.get(...a), list: async () => { throw new Error('the volume did not answer'); } };
    const said: string[] = [];
    const archive = new AuditArchive(unreachable, (m) => said.push(m));
    const dir = join(root, 'data', 'audit');
    await archive.bringBack(dir);
    expect(said.join('\n')).toContain('could not be read at start (the volume did not answer)');
    expect(archive.where).toContain('not copied');
    const log = AuditLog.open({ dir, log: () => undefined });
    log.record(entry(1));
    log.close();
    await archive.copy(join(dir, 'audit.jsonl'));
    expect(await fs.readFile(join(target, 'audit', 'audit.jsonl'), 'utf8')).toBe('{"kept":"as it was"}\n');
  });
});
