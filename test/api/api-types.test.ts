// The dashboard's API types (web/src/api/openapi-types.ts) are generated from the OpenAPI document
// the service serves at GET /openapi.json: the committed file must be what the generator makes
// from the document now, so a response shape changed without regenerating fails here.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/api/openapi/document.ts';
import { generateApiTypes, TYPES_FILE } from '../../scripts/gen-api-types.ts';

/** The document as GET /openapi.json sends it (the route serialises this same object). */
const served = () => JSON.parse(JSON.stringify(openApiDocument()));

const schemas = (shapes: Record<string, unknown>) => ({ components: { schemas: shapes } });

describe('the dashboard\'s API types', () => {
  it('are committed as the generator writes them from the document', async () => {
    const committed = await readFile(TYPES_FILE, 'utf8');
    expect(committed === generateApiTypes(served()), 'web/src/api/openapi-types.ts differs from GET /openapi.json: run npm run gen:api-types').toBe(true);
  });

  it('say on their first line that they are generated, and by what', () => {
    expect(generateApiTypes(served()).split('\n').slice(0, 2).join(' ')).toMatch(/^\/\/ Generated from .* `npm run gen:api-types`/);
  });

  it('have one type for each schema of the document', () => {
    const text = generateApiTypes(served());
    const named = [...text.matchAll(/^export type (\w+) = /gm)].map((match) => match[1]);
    expect(named).toEqual(Object.keys(served().components.schemas));
  });

  it('turn required, nullable, enumerated, referenced and open fields into their types', () => {
    const text = generateApiTypes(schemas({
      Thing: {
        type: 'object',
        required: ['id', 'port', 'state'],
        properties: {
          id: { type: 'string', description: 'Its id.' },
          port: { type: ['integer', 'null'] },
          state: { enum: ['on', 'off', null] },
          other: { $ref: '#/components/schemas/Other' },
          'odd-name': { type: 'array', items: { anyOf: [{ type: 'string' }, { const: 1 }] } },
          labels: { type: 'object', additionalProperties: { type: 'string' } },
        },
      },
      Other: { type: 'object', properties: {}, additionalProperties: false },
    }));
    expect(text).toContain([
      'export type Thing = {',
      '  /** Its id. */',
      '  id: string;',
      '  port: number | null;',
      '  state: "on" | "off" | null;',
      '  other?: Other;',
      '  "odd-name"?: Array<string | 1>;',
      '  labels?: { [key: string]: string; };',
      '};',
    ].join('\n'));
  });

  it('refuse a keyword they cannot carry, and a reference to no schema, rather than say less than the document', () => {
    expect(() => generateApiTypes(schemas({ Both: { allOf: [{ type: 'string' }] } }))).toThrow(/components\.schemas\.Both: .*"allOf"/);
    expect(() => generateApiTypes(schemas({ Lost: { $ref: '#/components/schemas/Nowhere' } }))).toThrow(/cannot resolve \$ref/);
  });
});
