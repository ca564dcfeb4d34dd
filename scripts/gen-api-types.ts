// `npm run gen:api-types`: writes web/src/api/openapi-types.ts, one TypeScript type for each
// schema of the OpenAPI document (GET /openapi.json, built by src/api/openapi/), so the dashboard
// reads the API in the shapes the service documents, and its answers are checked against them
// (test/api/openapi-responses.test.ts). test/api/api-types.test.ts generates it again in memory
// and fails when the committed file differs.
//
// The schemas use a small part of JSON Schema, which this file turns into types itself: a keyword
// it does not know is refused, so a new one is a decision here rather than a type that says less
// than the document.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildOpenApiDocument } from '../src/api/openapi/document.ts';

type Schema = { [keyword: string]: any };

export const TYPES_FILE = fileURLToPath(new URL('../web/src/api/openapi-types.ts', import.meta.url));

const HEADER = `// Generated from the OpenAPI document (GET /openapi.json, src/api/openapi/) by
// \`npm run gen:api-types\` (scripts/gen-api-types.ts). Do not edit: change the document and run it
// again. One type for each schema of components.schemas, under its name there.
`;

/** Keywords that only constrain values (or name them): a type carries none of them. */
const CONSTRAINTS = new Set([
  'title', 'format', 'pattern', 'minLength', 'maxLength', 'minimum', 'maximum',
  'minItems', 'maxItems', 'uniqueItems', 'minProperties', 'maxProperties', 'default',
]);
/** Keywords the types are made of. */
const SHAPES = new Set(['$ref', 'anyOf', 'oneOf', 'const', 'enum', 'type', 'properties', 'required', 'additionalProperties', 'items', 'description']);

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const REF = /^#\/components\/schemas\/([A-Za-z][A-Za-z0-9]*)$/;

/** The file's text: a type for each schema of the document, in the document's order. */
export function generateApiTypes(document: Schema): string {
  const schemas: Record<string, Schema> = document.components?.schemas ?? {};
  const blocks = Object.entries(schemas).map(([name, schema]) => {
    if (!IDENTIFIER.test(name)) throw new Error(`components.schemas.${name}: not a name a type can have`);
    return `${docComment(schema.description, '')}export type ${name} = ${typeOf(schema, schemas, '', `components.schemas.${name}`)};\n`;
  });
  return `${HEADER}\n${blocks.join('\n')}`;
}

function typeOf(schema: Schema, schemas: Record<string, Schema>, indent: string, at: string): string {
  for (const keyword of Object.keys(schema)) {
    if (!CONSTRAINTS.has(keyword) && !SHAPES.has(keyword)) {
      throw new Error(`${at}: scripts/gen-api-types.ts does not turn "${keyword}" into a type yet: decide what it means for the dashboard's types`);
    }
  }
  if (schema.$ref !== undefined) {
    const name = REF.exec(schema.$ref)?.[1];
    if (!name || !schemas[name]) throw new Error(`${at}: cannot resolve $ref ${schema.$ref}`);
    return name;
  }
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return union(alternatives.map((alternative: Schema, i: number) => typeOf(alternative, schemas, indent, `${at}/${schema.anyOf ? 'anyOf' : 'oneOf'}/${i}`)));
  if ('const' in schema) return literal(schema.const);
  if (schema.enum) return union(schema.enum.map(literal));
  if (schema.type === undefined) return 'unknown';
  const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type];
  return union(types.map((type) => {
    switch (type) {
      case 'string': return 'string';
      case 'integer': case 'number': return 'number';
      case 'boolean': return 'boolean';
      case 'null': return 'null';
      case 'array': return arrayOf(schema.items ? typeOf(schema.items, schemas, indent, `${at}/items`) : 'unknown');
      case 'object': return objectOf(schema, schemas, indent, at);
      default: throw new Error(`${at}: unknown type "${type}"`);
    }
  }));
}

/**
 * An object type: its named properties (optional unless required), and an index signature when
 * more are allowed. Beside named properties the extra ones are `unknown`, since an index signature
 * must also fit every named property.
 */
function objectOf(schema: Schema, schemas: Record<string, Schema>, indent: string, at: string): string {
  const properties: Record<string, Schema> = schema.properties ?? {};
  const required = new Set<string>(schema.required ?? []);
  const inner = `${indent}  `;
  const lines = Object.entries(properties).map(([name, property]) => {
    const key = IDENTIFIER.test(name) ? name : JSON.stringify(name);
    const type = typeOf(property, schemas, inner, `${at}/properties/${name}`);
    return `${docComment(property.description, inner)}${inner}${key}${required.has(name) ? '' : '?'}: ${type};`;
  });
  const more = schema.additionalProperties;
  if (more === undefined ? lines.length === 0 : more !== false) {
    const type = typeof more === 'object' && lines.length === 0 ? typeOf(more, schemas, inner, `${at}/additionalProperties`) : 'unknown';
    lines.push(`${inner}[key: string]: ${type};`);
  }
  // A small object whose properties say nothing more reads best on one line.
  const oneLine = `{ ${lines.map((line) => line.trim()).join(' ')} }`;
  if (lines.every((line) => !line.includes('/**')) && indent.length + oneLine.length <= 100) return oneLine;
  return `{\n${lines.join('\n')}\n${indent}}`;
}

function arrayOf(item: string): string {
  return IDENTIFIER.test(item) ? `${item}[]` : `Array<${item}>`;
}

function union(types: string[]): string {
  return [...new Set(types)].join(' | ');
}

function literal(value: unknown): string {
  if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) return JSON.stringify(value);
  throw new Error(`a const or enum value ${JSON.stringify(value)} has no literal type`);
}

function docComment(description: unknown, indent: string): string {
  if (typeof description !== 'string' || description === '') return '';
  return `${indent}/** ${description.replaceAll('*/', '*\\/').replace(/\s*\n\s*/g, ' ')} */\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(TYPES_FILE, generateApiTypes(buildOpenApiDocument()));
  console.log(`wrote ${TYPES_FILE}`);
}
