// `npm run audit:verify -- <dir> [--expect <seq>:<hash>]`: walks the audit trail's hash chain in
// <dir> (the data folder's audit/, or the copy at the persistence target's audit/) and says whether
// it holds, or where it first breaks. With --expect (a seq and hash read earlier from GET /health or
// GET /audit, or from another copy), entries cut from the end are found too. Exit code: 0 when the
// chain holds, 1 when it breaks, 2 for a wrong command line.
import { existsSync, statSync } from 'node:fs';
import { verifyAuditDir } from '../src/audit/verify.ts';

const USAGE = 'usage: npm run audit:verify -- <audit folder> [--expect <seq>:<sha256 hex>]';

async function main(args: string[]): Promise<number> {
  const dir = args.find((arg, i) => !arg.startsWith('--') && args[i - 1] !== '--expect');
  const at = args.indexOf('--expect');
  const expected = at >= 0 ? /^(\d+):([0-9a-f]{64})$/.exec(args[at + 1] ?? '') : undefined;
  if (!dir || (at >= 0 && !expected)) {
    console.error(USAGE);
    return 2;
  }
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    console.error(`${dir} is not a folder: give the audit folder (<data folder>/audit, or <persistence target>/audit)`);
    return 2;
  }
  const result = await verifyAuditDir(dir, expected ? { expect: { seq: Number(expected[1]), hash: expected[2] } } : {});
  if (result.ok) {
    const anchored = result.anchored_at ? ` (starting after rotated-away files: entry ${result.anchored_at.seq} in ${result.anchored_at.file} is taken on trust)` : '';
    console.log(`ok: ${result.entries} entries in ${result.files} file(s), seq ${result.first_seq ?? '-'} to ${result.last_seq ?? '-'}, last hash ${result.last_hash ?? '-'}${anchored}`);
    return 0;
  }
  const broken = result.broken!;
  console.log(`broken: ${broken.file} line ${broken.line}${broken.seq !== null ? ` (seq ${broken.seq})` : ''}: ${broken.problem}`);
  console.log(`the ${result.entries} entries before it verify`);
  return 1;
}

process.exitCode = await main(process.argv.slice(2));
