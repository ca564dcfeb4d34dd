// Writes the table of routes of the API reference page (docs/api.md), between its
// `<!-- openapi:begin -->` and `<!-- openapi:end -->` lines, from the service's OpenAPI document.
// `npm run docs:api`; with --check it only says whether the page is up to date (exit 1 if not).
// Usage: node scripts/api-reference.mjs [--check] [page]
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildOpenApiDocument } from '../src/api/openapi/document.ts';
import { REFERENCE_COMMAND, renderReferenceTable, replaceRegion } from '../src/api/openapi/reference.ts';

const args = process.argv.slice(2);
const check = args.includes('--check');
const page = args.find((arg) => arg !== '--check') ?? fileURLToPath(new URL('../docs/api.md', import.meta.url));

const before = readFileSync(page, 'utf8');
let after;
try {
  after = replaceRegion(before, renderReferenceTable(buildOpenApiDocument()), page);
} catch (error) {
  console.error(error.message);
  process.exit(2);
}
if (check) {
  if (after !== before) {
    console.error(`${page}: the table of routes is out of date: run ${REFERENCE_COMMAND}`);
    process.exit(1);
  }
  console.log(`${page}: the table of routes is up to date`);
} else if (after !== before) {
  writeFileSync(page, after);
  console.log(`${page}: the table of routes was rewritten`);
} else {
  console.log(`${page}: the table of routes was up to date already`);
}
