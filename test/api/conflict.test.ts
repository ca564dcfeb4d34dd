// A spec write that keeps meeting another writer gives up with 409 CONFLICT, saying what to do,
// and the other writer's text is what stays.
import { promises as fsp, type PathLike } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.ts';

const realRename = fsp.rename;
const realLink = fsp.link;

let service: TestService | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await service?.stop();
  service = undefined;
});

describe('a write conflict', () => {
  it('answers 409 CONFLICT when the manifest changes under every attempt, and keeps the other writer\'s text', async () => {
    service = await startTestService();
    const { id } = (await service.request('POST', '/servers', { name: 'Contested' })).body;
    const file = `${service.settings.manifestsDir}/contested.yaml`;
    const original = await fsp.readFile(file, 'utf8');
    let edits = 0;
    const foreign = () => original.replace('displayName: Contested', `displayName: Edit ${edits}`);
    // Another program saves the file just before each move of it the store makes.
    const interfere = async (from: PathLike, to: PathLike) => {
      if (String(from) === file || String(to) === file) {
        edits++;
        await fsp.writeFile(file, foreign());
      }
    };
    vi.spyOn(fsp, 'rename').mockImplementation(async (from: PathLike, to: PathLike) => {
      await interfere(from, to);
      return realRename(from, to);
    });
    vi.spyOn(fsp, 'link').mockImplementation(async (from: PathLike, to: PathLike) => {
      await interfere(from, to);
      return realLink(from, to);
    });

    const answer = await service.request('POST', `/servers/${id}/start`);
    expect(answer.status).toBe(409);
    expect(answer.body).toMatchObject({ status: 'error', error: { code: 'CONFLICT' } });
    expect(answer.body.error.message).toMatch(/contested\.yaml kept changing.*try again/);
    vi.restoreAllMocks();
    expect(await fsp.readFile(file, 'utf8')).toBe(foreign());
  }, 30_000);
});
