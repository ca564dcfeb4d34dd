// Who reads which entries of the audit trail, with sign-on and `access: owner`: the actor of each
// entry is the signed-in identity; a person sees the entries of the servers they may see (attempts
// on them by others included) and their own acts on servers since deleted, never entries of a
// server they may not see; an admin sees every entry.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/audit/entry.ts';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

const ALICE = { 'X-Forwarded-Email': 'Alice@Example.com' };
const BOB = { 'X-Forwarded-Email': 'bob@example.com' };
const ADMIN = { 'X-Forwarded-Email': 'root@example.com' };

let service: TestService;
let alices: string;
let bobs: string;

const auditAs = async (who: Record<string, string>, path = '/audit?limit=500'): Promise<AuditEntry[]> => {
  const answer = await service.request('GET', path, undefined, who);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.entries;
};
const shown = (entries: AuditEntry[]) => entries.map((e) => `${e.actor} ${e.action} ${e.server_name} ${e.outcome}`).reverse();

beforeAll(async () => {
  service = await startTestService({ requireIdentity: true, config: { access: 'owner', admins: ['root@example.com'] } });
  alices = (await service.request('POST', '/servers', { name: 'Alice box' }, ALICE)).body.id;
  bobs = (await service.request('POST', '/servers', { name: 'Bob box' }, BOB)).body.id;
  expect((await service.request('POST', `/servers/${alices}/start`, undefined, ALICE)).status).toBe(200);
  // Bob tries Alice's server: refused as if it did not exist.
  expect((await service.request('POST', `/servers/${alices}/stop`, undefined, BOB)).status).toBe(404);
  await eventually(async () => (await auditAs(ADMIN)).length >= 4);
});
afterAll(async () => {
  await service?.stop();
});

describe('reading the audit trail with sign-on', () => {
  it('names the signed-in person as the actor, and shows an admin every entry', async () => {
    expect(shown(await auditAs(ADMIN))).toEqual([
      'alice@example.com create alice-box ok',
      'bob@example.com create bob-box ok',
      'alice@example.com start alice-box ok',
      'bob@example.com stop alice-box refused',
    ]);
  });

  it('shows a person the entries of their own servers, attempts on them by others included, and nothing of other servers', async () => {
    expect(shown(await auditAs(ALICE))).toEqual([
      'alice@example.com create alice-box ok',
      'alice@example.com start alice-box ok',
      'bob@example.com stop alice-box refused',
    ]);
    // Bob's refused attempt would name Alice's server: he does not see it.
    expect(shown(await auditAs(BOB))).toEqual(['bob@example.com create bob-box ok']);
    expect(shown(await auditAs(BOB, `/audit?server=${alices}`))).toEqual([]);
    expect((await service.request('GET', `/servers/${alices}/audit`, undefined, BOB)).status).toBe(404);
    expect(shown(await auditAs(ADMIN, `/servers/${bobs}/audit`))).toEqual(['bob@example.com create bob-box ok']);
  });

  it('still shows a person their own acts on a server after they deleted it, and not to others', async () => {
    expect((await service.request('DELETE', `/servers/${alices}`, undefined, ALICE)).status).toBe(200);
    const deleted = 'alice@example.com delete alice-box ok';
    await eventually(async () => shown(await auditAs(ADMIN)).includes(deleted));
    const hers = shown(await auditAs(ALICE));
    expect(hers).toContain(deleted);
    expect(hers).not.toContain('bob@example.com stop alice-box refused');
    expect(shown(await auditAs(BOB))).toEqual(['bob@example.com create bob-box ok']);
  });
});
