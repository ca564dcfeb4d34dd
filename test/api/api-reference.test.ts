// The API reference page (docs/api.md): its table of routes is the OpenAPI document's, and
// scripts/api-reference.mjs (`npm run docs:api`) rewrites it between the markers and nothing else.
import { execFile } from 'node:child_process';
import { promises as fs, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../src/api/openapi/document.ts';
import { REFERENCE_COMMAND, REGION_BEGIN, REGION_END, regionOf, renderReferenceTable } from '../../src/api/openapi/reference.ts';
import { projectFile } from '../../src/core/project.ts';
import { operationsOf } from '../helpers/openapi.ts';

const SCRIPT = projectFile('scripts/api-reference.mjs');
const run = promisify(execFile);

/** Runs the script; its exit code and what it printed. */
async function script(...args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [SCRIPT, ...args]);
    return { code: 0, out: stdout + stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, out: failed.stdout + failed.stderr };
  }
}

describe('docs/api.md', () => {
  it('has the table of routes of the OpenAPI document', () => {
    const page = readFileSync(projectFile('docs/api.md'), 'utf8');
    const region = regionOf(page);
    expect(region, `docs/api.md must hold the lines ${REGION_BEGIN} and ${REGION_END}`).toBeDefined();
    const expected = renderReferenceTable(buildOpenApiDocument());
    expect(region === expected, `the table of routes in docs/api.md is out of date: run ${REFERENCE_COMMAND}`).toBe(true);
  });

  it('lists every operation of the document, with what its success carries', () => {
    const doc = buildOpenApiDocument();
    const rows = renderReferenceTable(doc).split('\n').filter((line) => line.startsWith('| `'));
    for (const { method, path } of operationsOf(doc)) {
      const row = rows.find((line) => {
        const [methods, rowPath] = /^\| `([A-Z, ]+) (\S+)`/.exec(line)!.slice(1);
        return rowPath === path && methods.split(', ').includes(method.toUpperCase());
      });
      expect(row, `${method.toUpperCase()} ${path} has no row`).toBeDefined();
    }
    expect(rows).toContain('| `POST /servers/{id}/start` | Start a server | 200 `{status: "success", message, data: {id, status, pid}}` | 200, 202, 404, 409, 500 |');
  });
});

describe('scripts/api-reference.mjs', () => {
  let dir: string;
  let page: string;
  const BEFORE = '# REST API\n\nProse before.\n\n';
  const AFTER = '\n\n## Creating servers\n\nProse after.\n';

  beforeEach(async () => {
    dir = await fs.mkdtemp(join(tmpdir(), 'api-reference-'));
    page = join(dir, 'api.md');
    await fs.writeFile(page, `${BEFORE}${REGION_BEGIN}\n| an old table |\n${REGION_END}${AFTER}`);
  });

  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('says a stale table is stale, and how to fix it, without touching the page', async () => {
    const before = await fs.readFile(page, 'utf8');
    const { code, out } = await script('--check', page);
    expect(code).toBe(1);
    expect(out).toContain(`out of date: run ${REFERENCE_COMMAND}`);
    expect(await fs.readFile(page, 'utf8')).toBe(before);
  });

  it('rewrites the table between the markers and leaves the prose around them', async () => {
    expect((await script(page)).code).toBe(0);
    const after = await fs.readFile(page, 'utf8');
    expect(after.startsWith(`${BEFORE}${REGION_BEGIN}\n`)).toBe(true);
    expect(after.endsWith(`\n${REGION_END}${AFTER}`)).toBe(true);
    expect(regionOf(after)).toBe(renderReferenceTable(buildOpenApiDocument()));
    expect(await script('--check', page)).toMatchObject({ code: 0 });
  });

  it('refuses a page without the markers, saying which lines it needs', async () => {
    await fs.writeFile(page, '# REST API\n');
    const { code, out } = await script(page);
    expect(code).toBe(2);
    expect(out).toContain(`must hold the lines ${REGION_BEGIN} and ${REGION_END}`);
  });
});
