// The audit trail with a persistence target (a folder): snapshots, a snapshot put back, an undone
// delete and the controller's restores are entries; the trail is copied to the target, and a fresh
// data folder (a new container) takes it back and goes on with the same chain.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/audit/entry.ts';
import { verifyAuditDir } from '../../src/audit/verify.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

let keep: string;
const services: TestService[] = [];

beforeAll(async () => {
  keep = await fs.mkdtemp(join(tmpdir(), 'devbox-audit-keep-'));
});
afterAll(async () => {
  for (const service of services) await service.stop();
  await fs.rm(keep, { recursive: true, force: true });
});

const start = async () => {
  const service = await startTestService({ persistTo: keep });
  services.push(service);
  return service;
};
const auditOf = async (service: TestService, query = '?limit=500'): Promise<AuditEntry[]> => (await service.request('GET', `/audit${query}`)).body.entries;
const entryOf = (service: TestService, server: string, action: string, which: (e: AuditEntry) => boolean = () => true) =>
  eventually(async () => (await auditOf(service, `?server=${server}&action=${action}`)).find(which), 30_000);

describe('the audit trail with a persistence target', () => {
  let first: TestService;
  let id: string;

  it('records a snapshot, a snapshot put back (and one refused), an undone delete and the controller\'s restore', async () => {
    first = await start();
    const created = await first.request('POST', '/servers', { name: 'Kept' });
    expect(created.status).toBe(201);
    id = created.body.id;
    const snapshot = await first.request('POST', `/servers/${id}/snapshot`);
    expect(snapshot.status, JSON.stringify(snapshot.body)).toBe(200);
    expect(await entryOf(first, id, 'snapshot')).toMatchObject({ actor: 'local', door: 'api', outcome: 'ok' });

    const unknown = await first.request('POST', `/servers/${id}/restore`, { snapshot_id: 'nothing-like-it' });
    expect(unknown.status).toBe(404);
    expect(await entryOf(first, id, 'snapshot-restore')).toMatchObject({ outcome: 'refused', code: 'SNAPSHOT_NOT_FOUND' });
    const restored = await first.request('POST', `/servers/${id}/restore`, { snapshot_id: snapshot.body.data.id });
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
    expect(await entryOf(first, id, 'snapshot-restore', (e) => e.outcome === 'ok')).toMatchObject({ detail: `snapshot ${snapshot.body.data.id}` });
    expect(await entryOf(first, id, 'restore')).toMatchObject({ actor: 'controller', door: 'controller', outcome: 'ok' });

    expect((await first.request('DELETE', `/servers/${id}`)).status).toBe(200);
    // Undone once the target holds the delete.
    await eventually(async () => (await first.request('GET', '/snapshots/deleted')).body.data.servers.some((s: { name: string }) => s.name === 'kept'), 30_000);
    const undone = await first.request('POST', '/snapshots/deleted/kept/restore');
    expect(undone.status, JSON.stringify(undone.body)).toBe(201);
    expect(await entryOf(first, 'kept', 'undelete')).toMatchObject({ actor: 'local', door: 'api', server_name: 'kept', server_id: undone.body.id, outcome: 'ok' });
  });

  it('copies the trail to the target, and a fresh data folder takes it back and continues its chain', async () => {
    const before = await auditOf(first, '?limit=1');
    const last = before[0];
    await first.stop();
    services.splice(services.indexOf(first), 1);
    const copy = join(keep, 'audit');
    expect(await verifyAuditDir(copy)).toMatchObject({ ok: true, last_seq: last.seq, last_hash: last.hash });

    // A new container: an empty data folder, the same target.
    const second = await start();
    expect((await second.request('POST', '/servers', { name: 'After the move' })).status).toBe(201);
    const next = await eventually(async () => (await auditOf(second)).filter((e) => e.seq > last.seq).at(-1), 30_000);
    expect(next.seq).toBe(last.seq + 1);
    expect(next.prev).toBe(last.hash);
    expect((await auditOf(second)).some((e) => e.seq === 1)).toBe(true);
    const verified = (await second.request('GET', '/audit/verify')).body;
    expect(verified).toMatchObject({ ok: true, first_seq: 1 });
  });
});
