// GET /servers a page at a time and filtered: every server exactly once across the pages in
// manifest-name order, pages that resume right after their token whatever changed meanwhile,
// filters by status, owner and name prefix, and a clear 400 for a bad parameter. Without any
// of them the answer is the whole list, as the interface gives it.
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;
interface Listed { id: string; manifest: string; name: string; status: string; owner: string | null }

const manifest = (name: string, owner?: string) =>
  `apiVersion: devbox.dev/v1alpha1\nkind: EditorServer\nmetadata:\n  name: ${name}\n` +
  (owner ? `  annotations:\n    devbox.dev/owner: ${owner}\n` : '') +
  `spec:\n  displayName: ${name.startsWith('lab') ? 'Lab' : 'Course'} seat ${name}\n  running: false\n`;

const write = (name: string, owner?: string) => fs.writeFile(join(service.settings.manifestsDir, `${name}.yaml`), manifest(name, owner));
const get = (query: string) => service.request('GET', `/servers?${query}`);
const all = async () => (await service.request('GET', '/servers')).body as Listed[];

/** Every page of `query`, following X-Continue; each page's manifests. */
async function pages(query: string): Promise<string[][]> {
  const out: string[][] = [];
  let token: string | null = null;
  do {
    const res = await get(`${query}${token ? `&continue=${token}` : ''}`);
    expect(res.status).toBe(200);
    out.push((res.body as Listed[]).map((s) => s.manifest));
    token = res.headers.get('x-continue');
  } while (token !== null && out.length < 100);
  return out;
}

beforeAll(async () => {
  service = await startTestService();
  const names = [...Array.from({ length: 20 }, (_, i) => `seat-${String(i).padStart(2, '0')}`), 'lab-a', 'lab-b', 'lab-c'];
  await Promise.all(names.map((name, i) => write(name, i % 2 === 0 ? 'Ada@example.com' : 'bob@example.com')));
  const created = await service.request('POST', '/servers', { name: 'Runs' });
  await service.request('POST', `/servers/${created.body.id}/start`);
  await eventually(async () => {
    const list = await all();
    return list.length === 24 && list.filter((s) => s.status === 'stopped').length === 23 && list.some((s) => s.status === 'running');
  }, 20_000);
});
afterAll(() => service?.stop());

describe('GET /servers in pages', () => {
  it('gives every server once, in manifest-name order, with the bytes the whole list has', async () => {
    const walked = await pages('limit=7');
    expect(walked.map((p) => p.length)).toEqual([7, 7, 7, 3]);
    const names = walked.flat();
    const whole = await all();
    expect(names).toEqual(whole.map((s) => s.manifest).sort());
    // The same records as the plain list (uptime aside, which moves).
    const first = (await get('limit=1')).body[0];
    const same = whole.find((s) => s.manifest === first.manifest)!;
    expect({ ...first, uptime: 0 }).toEqual({ ...same, uptime: 0 });
  });

  it('resumes right after its token: a server added before it is not repeated, one added after it is listed', async () => {
    const firstPage = await get('limit=10');
    const token = firstPage.headers.get('x-continue')!;
    const last = (firstPage.body as Listed[]).at(-1)!.manifest;
    await write('aaa-early'); // sorts before the token
    await write('zzz-late'); // sorts after it
    await eventually(async () => (await all()).filter((s) => s.manifest === 'aaa-early' || s.manifest === 'zzz-late').length === 2);
    const rest: string[] = [];
    let next: string | null = token;
    while (next !== null) {
      const res = await get(`limit=10&continue=${next}`);
      rest.push(...(res.body as Listed[]).map((s) => s.manifest));
      next = res.headers.get('x-continue');
    }
    expect(rest).not.toContain('aaa-early');
    expect(rest).toContain('zzz-late');
    expect(rest.every((name) => name > last)).toBe(true);
  });

  it('filters by status, owner (any case) and name prefix, alone and with paging', async () => {
    expect(((await get('status=running')).body as Listed[]).map((s) => s.name)).toEqual(['Runs']);
    const ada = (await get('owner=ada@EXAMPLE.com')).body as Listed[];
    expect(ada.length).toBe(12);
    expect(ada.every((s) => s.owner === 'ada@example.com')).toBe(true);
    expect(((await get('name_prefix=lab')).body as Listed[]).map((s) => s.manifest)).toEqual(['lab-a', 'lab-b', 'lab-c']);
    expect(((await get('name_prefix=LAB%20SEAT%20lab-b')).body as Listed[]).map((s) => s.manifest)).toEqual(['lab-b']);
    expect((await pages('status=stopped,running&owner=bob@example.com&limit=5')).flat()).toEqual(
      (await all()).filter((s) => s.owner === 'bob@example.com').map((s) => s.manifest).sort());
  });

  it('refuses a bad parameter with 400, naming it and what to give', async () => {
    for (const [query, words] of [
      ['limit=0', /\?limit= must be a whole number from 1 to 1000, not "0"/],
      ['limit=ten', /\?limit= must be a whole number/],
      ['limit=5&limit=6', /\?limit= is given more than once/],
      ['continue=%2F%2F..', /\?continue= is not a token this service gave/],
      ['status=sleeping', /\?status= "sleeping" is not a status: use running, stopped/],
    ] as const) {
      const res = await get(query);
      expect(res.status, query).toBe(400);
      expect(res.body.error.code).toBe('INVALID_PAGE');
      expect(res.body.error.message).toMatch(words);
    }
  });
});
