// Memory at rest: what loading the service brings in. Packages needed only by some
// requests (git, ZIP, uploads, log streams, metrics scrapes, the editor proxy's pool) load on
// first use, and no ESM import of node:http pulls in Node's bundled undici (an ESM namespace
// reads every export, and http's WebSocket getters load it: about 10 MB). Checked in a fresh
// Node process that imports src/service.ts, as `npm start` would import dist/service.js.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const SERVICE = new URL('../../src/service.ts', import.meta.url).pathname;

const PROBE = `
import { createRequire } from 'node:module';
await import(${JSON.stringify(SERVICE)});
const require = createRequire(import.meta.url);
const packages = new Set(Object.keys(require.cache).map((p) => /node_modules\\/((@[^/]+\\/)?[^/]+)\\//.exec(p)?.[1]).filter(Boolean));
console.log(JSON.stringify({ packages: [...packages].sort(), internal: process.moduleLoadList.filter((m) => m.includes('undici')) }));
`;

describe('loading the service', () => {
  it('leaves the packages of first use and Node\'s bundled undici unloaded', () => {
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', PROBE], { encoding: 'utf8' });
    const { packages, internal } = JSON.parse(out.trim().split('\n').at(-1)!) as { packages: string[]; internal: string[] };
    // What the service does need at once is there (the probe sees CommonJS packages).
    expect(packages).toEqual(expect.arrayContaining(['express', 'yaml', 'ajv', 'pidusage']));
    for (const lazy of ['simple-git', 'adm-zip', 'multer', 'ws', 'prom-client', '@opentelemetry/api', 'undici', '@databricks/sdk-experimental']) {
      expect(packages, `${lazy} is loaded when the service is imported`).not.toContain(lazy);
    }
    expect(internal).toEqual([]);
  });
});
