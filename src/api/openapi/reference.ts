// The API reference page's table of routes (docs/api.md), made from the OpenAPI document so the
// page says what GET /openapi.json says. scripts/api-reference.mjs writes it between the markers.

import { METHODS } from './document.ts';

type Json = Record<string, any>;

export const REGION_BEGIN = '<!-- openapi:begin -->';
export const REGION_END = '<!-- openapi:end -->';
/** What rewrites the region; the test that finds it stale says to run it. */
export const REFERENCE_COMMAND = 'npm run docs:api';

const cell = (text: string): string => text.replaceAll('|', '\\|').replace(/\s*\n\s*/g, ' ');

/** A schema's component name when it is a reference. */
const refName = (schema: Json): string | undefined => schema?.$ref?.split('/').at(-1);

/** Component schemas with more fields than this are named, not spelled out (the page describes them in prose). */
const SPELLED_OUT_FIELDS = 7;
/** Objects nested deeper than this are `{…}`. */
const MAX_DEPTH = 3;

/**
 * A JSON shape in one line, for a table cell: `{status: "success", message, data: {id, status, pid}}`;
 * a large component by its name (`[ServerRecord]`), optional fields with `?`.
 */
function shapeOf(doc: Json, schema: Json | undefined, depth = 0, named = new Set<string>()): string {
  if (!schema) return '';
  const name = refName(schema);
  if (name !== undefined) {
    const target = doc.components.schemas[name];
    if (depth >= MAX_DEPTH || Object.keys(target?.properties ?? {}).length > SPELLED_OUT_FIELDS) {
      named.add(name);
      return name;
    }
    return shapeOf(doc, target, depth, named);
  }
  if ('const' in schema) return JSON.stringify(schema.const);
  if (schema.items) return `[${shapeOf(doc, schema.items, depth, named) || (typeof schema.items.type === 'string' ? schema.items.type : '…')}]`;
  if (!schema.properties) return '';
  if (depth >= MAX_DEPTH) return '{…}';
  const required = new Set<string>(schema.required ?? []);
  const fields = Object.entries(schema.properties as Record<string, Json>).map(([key, value]) => {
    const inner = shapeOf(doc, value, depth + 1, named);
    return `${key}${required.has(key) ? '' : '?'}${inner ? `: ${inner}` : ''}`;
  });
  return `{${fields.join(', ')}${schema.additionalProperties ? ', …' : ''}}`;
}

/** What the first successful answer of an operation carries: its status, and its JSON shape or media type. */
function successOf(doc: Json, operation: Json, named: Set<string>): string {
  const code = Object.keys(operation.responses).find((c) => /^[12]\d\d$/.test(c));
  if (code === undefined) return operation.responses.default?.description ?? '';
  const content = operation.responses[code].content ?? {};
  const json = content['application/json']?.schema;
  const shape = json ? shapeOf(doc, json, 0, named) : '';
  const type = Object.keys(content).filter((t) => t !== 'application/json').join(', ');
  return [code, shape && `\`${shape}\``, type && !shape && type].filter(Boolean).join(' ');
}

interface Row {
  methods: string[];
  path: string;
  summary: string;
  success: string;
  codes: string;
  socket: boolean;
}

/**
 * One table per tag, in the document's tag order: method and path, summary, the success's shape,
 * every response code. The operations of one path alike but for their method (the editor
 * proxy's) share a row.
 */
export function renderReferenceTable(doc: Json): string {
  const rows = new Map<string, Row[]>((doc.tags as Json[]).map((tag) => [tag.name, []]));
  const named = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    for (const method of METHODS.filter((m) => item[m])) {
      const operation = item[method];
      const tag = operation.tags?.[0] ?? 'other';
      const codes = Object.keys(operation.responses).map((code) => (code === 'default' ? 'other' : code)).join(', ');
      const summary = operation.summary ?? '';
      const socket = operation['x-websocket'] === true;
      const success = successOf(doc, operation, named);
      if (!rows.has(tag)) rows.set(tag, []);
      const same = rows.get(tag)!.find((row) => row.path === path && row.summary === summary && row.success === success && row.codes === codes && row.socket === socket);
      if (same) same.methods.push(method.toUpperCase());
      else rows.get(tag)!.push({ methods: [method.toUpperCase()], path, summary, success, codes, socket });
    }
  }
  const descriptions = new Map((doc.tags as Json[]).map((tag) => [tag.name, tag.description as string | undefined]));
  const sections = [...rows].filter(([, lines]) => lines.length > 0).map(([tag, lines]) => [
    `### ${tag[0].toUpperCase()}${tag.slice(1)}`,
    '',
    ...(descriptions.get(tag) ? [descriptions.get(tag)!, ''] : []),
    '| method and path | what it does | on success | all answers |',
    '|---|---|---|---|',
    ...lines.map((row) => `| \`${row.methods.join(', ')} ${row.path}\`${row.socket ? ' (WebSocket)' : ''} | ${cell(row.summary)} | ${cell(row.success)} | ${row.codes} |`),
  ].join('\n'));
  return [
    `<!-- Generated from GET /openapi.json (src/api/openapi/) by \`${REFERENCE_COMMAND}\`: edit the document, not this table. -->`,
    '',
    sections.join('\n\n'),
    ...(named.size > 0 ? ['', `Shapes named above are schemas of the document (\`components.schemas\` of \`GET /openapi.json\`): ${[...named].sort().map((n) => `\`${n}\``).join(', ')}.`] : []),
  ].join('\n');
}

/** `text` with the region between the markers replaced by `content`; an error naming the file when the markers are not there once each, in order. */
export function replaceRegion(text: string, content: string, file = 'the file'): string {
  const begin = text.indexOf(REGION_BEGIN);
  const end = text.indexOf(REGION_END);
  if (begin < 0 || end < begin || text.indexOf(REGION_BEGIN, begin + 1) >= 0 || text.indexOf(REGION_END, end + 1) >= 0) {
    throw new Error(`${file} must hold the lines ${REGION_BEGIN} and ${REGION_END} once each, in that order: the table of routes goes between them`);
  }
  return `${text.slice(0, begin + REGION_BEGIN.length)}\n${content}\n${text.slice(end)}`;
}

/** The region's content as it is in `text` (without the markers' lines), or undefined without markers. */
export function regionOf(text: string): string | undefined {
  const begin = text.indexOf(REGION_BEGIN);
  const end = text.indexOf(REGION_END);
  if (begin < 0 || end < begin) return undefined;
  return text.slice(begin + REGION_BEGIN.length, end).replace(/^\n/, '').replace(/\n$/, '');
}
