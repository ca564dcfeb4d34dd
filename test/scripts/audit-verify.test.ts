// `npm run audit:verify -- <dir>`: the command an operator runs on the data folder's audit/ or on
// the copy at the persistence target: exit 0 and the figures when the chain holds, exit 1 naming
// the file, line and seq where it breaks, and a cut end found against --expect.
import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../../src/audit/audit-log.ts';
import { projectFile } from '../../src/core/project.ts';

let dir: string;
beforeEach(async () => {
  dir = await fs.mkdtemp(join(tmpdir(), 'devbox-audit-verify-'));
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

const run = (...args: string[]) => execa(process.execPath, [projectFile('scripts/audit-verify.ts'), ...args], { reject: false });

describe('npm run audit:verify', () => {
  it('says the chain holds, points at an altered entry, and finds a cut end against --expect', async () => {
    const log = AuditLog.open({ dir, log: () => undefined });
    for (let n = 1; n <= 5; n++) log.record({ actor: 'local', door: 'api', action: 'start', server_id: 'x', server_name: 'x', outcome: 'ok' });
    const last = log.state();
    log.close();

    const ok = await run(dir);
    expect(ok.exitCode).toBe(0);
    expect(ok.stdout).toBe(`ok: 5 entries in 1 file(s), seq 1 to 5, last hash ${last.last_hash}`);

    const file = join(dir, 'audit.jsonl');
    const lines = (await fs.readFile(file, 'utf8')).split('\n').filter(Boolean);
    await fs.writeFile(file, `${lines.slice(0, 4).join('\n')}\n`);
    expect((await run(dir)).exitCode).toBe(0);
    const cut = await run(dir, '--expect', `${last.last_seq}:${last.last_hash}`);
    expect(cut.exitCode).toBe(1);
    expect(cut.stdout).toContain('its newest entries were cut off');

    await fs.writeFile(file, `${lines.map((line, i) => (i === 1 ? line.replace('"start"', '"stop"') : line)).join('\n')}\n`);
    const altered = await run(dir);
    expect(altered.exitCode).toBe(1);
    expect(altered.stdout).toContain('broken: audit.jsonl line 2 (seq 2): its content does not match its hash');

    expect((await run()).exitCode).toBe(2);
  });
});
