// The EditorServer CRD (deploy/kubernetes/crd.yaml) is generated from the manifests' JSON Schema:
// the committed file must be what the generator makes now, and its schema structural, as
// apiextensions v1 requires. test/kubernetes/crd.test.ts shows a real API server taking it.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CRD_FILE, SCHEMA_FILE, generateCrd, structuralSchema } from '../../scripts/generate-crd.ts';

const jsonSchema = JSON.parse(await readFile(SCHEMA_FILE, 'utf8'));
const generated = generateCrd(jsonSchema);
const crd = parse(generated);
const openAPIV3Schema = crd.spec.versions[0].schema.openAPIV3Schema;

/** Every schema node under `node`, with its path, the way apiextensions walks them. */
function* nodes(node: any, path = ''): Generator<[string, any]> {
  yield [path || '/', node];
  for (const [name, child] of Object.entries<any>(node.properties ?? {})) yield* nodes(child, `${path}/${name}`);
  if (node.items) yield* nodes(node.items, `${path}/items`);
  if (typeof node.additionalProperties === 'object') yield* nodes(node.additionalProperties, `${path}/*`);
}

describe('the EditorServer CRD', () => {
  it('is committed as the generator writes it from the schema', async () => {
    const committed = await readFile(CRD_FILE, 'utf8');
    expect(committed === generated, 'deploy/kubernetes/crd.yaml differs from the schema: run npm run generate:crd').toBe(true);
  });

  it('writes every pattern in the syntax the API server compiles (Go\'s RE2: no lookaround, no backreferences)', () => {
    const patterns = [...nodes(openAPIV3Schema)].filter(([, node]) => typeof node.pattern === 'string');
    expect(patterns.length).toBeGreaterThan(5);
    const unsupported = patterns.filter(([, node]) => /\(\?[=!<]|\\[1-9]|\\u[0-9a-fA-F]{4}/.test(node.pattern)).map(([path, node]) => `${path}: ${node.pattern}`);
    expect(unsupported, 'apiextensions compiles patterns with Go\'s regexp (RE2): write them without (?=, (?!, (?<, \\1 or \\uXXXX').toEqual([]);
  });

  it('says on its first line that it is generated, and by what', () => {
    expect(generated.split('\n')[0]).toMatch(/^# Generated from schemas\/editorserver\.schema\.json by `npm run generate:crd`/);
  });

  it('names the resource devbox.dev/v1alpha1 EditorServer, with its status subresource and printer columns', () => {
    expect(crd.metadata.name).toBe('editorservers.devbox.dev');
    expect(crd.spec).toMatchObject({
      group: 'devbox.dev',
      scope: 'Namespaced',
      names: { kind: 'EditorServer', plural: 'editorservers', singular: 'editorserver', shortNames: ['eds'] },
    });
    expect(crd.spec.versions).toHaveLength(1);
    const [version] = crd.spec.versions;
    expect(version).toMatchObject({ name: 'v1alpha1', served: true, storage: true, subresources: { status: {} } });
    expect(version.additionalPrinterColumns.map((c: any) => `${c.name} ${c.type} ${c.jsonPath}`)).toEqual([
      'Phase string .status.phase',
      'Port integer .status.port',
      'Owner string .metadata.annotations.devbox\\.dev/owner',
      'Age date .metadata.creationTimestamp',
    ]);
  });

  it('has a structural schema: every node typed or free-form, no additionalProperties beside properties', () => {
    for (const [path, node] of nodes(openAPIV3Schema)) {
      expect(node.type !== undefined || node['x-kubernetes-preserve-unknown-fields'] === true, `${path} has a type`).toBe(true);
      expect(node.properties && 'additionalProperties' in node, `${path} has additionalProperties beside properties`).toBeFalsy();
      for (const refused of ['$ref', '$schema', '$id', 'definitions', 'const', 'oneOf', 'anyOf', 'allOf', 'not', 'nullable', 'uniqueItems']) {
        expect(node, `${path} carries ${refused}, which apiextensions v1 refuses or this CRD should not need`).not.toHaveProperty([refused]);
      }
    }
  });

  it('restricts only the name in metadata, as Kubernetes allows', () => {
    expect(openAPIV3Schema.properties.metadata).toEqual({
      type: 'object',
      properties: { name: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', maxLength: 63 } },
    });
  });

  it('keeps the free-form objects free-form, and the maps maps', () => {
    expect(openAPIV3Schema.properties.spec.properties.settings['x-kubernetes-preserve-unknown-fields']).toBe(true);
    expect(openAPIV3Schema.properties.status['x-kubernetes-preserve-unknown-fields']).toBe(true);
    expect(openAPIV3Schema.properties.spec.properties.workspace['x-kubernetes-preserve-unknown-fields']).toBeUndefined();
  });

  it('keeps the bounds, patterns and required fields of the schema', () => {
    const spec = openAPIV3Schema.properties.spec;
    expect(spec.required).toEqual(['running']);
    expect(spec.properties.port).toEqual({ type: 'integer', minimum: 1024, maximum: 65535 });
    expect(spec.properties.restartPolicy).toEqual({ type: 'string', enum: ['Never', 'OnFailure', 'Always'] });
    expect(spec.properties.resources.properties.limits.properties.memory.pattern).toBe(jsonSchema.definitions.quantity.pattern);
    expect(spec.properties.workspace.properties.source.properties.git.required).toEqual(['url']);
  });
});

describe('the conversion', () => {
  const convert = (properties: object) => structuralSchema({ type: 'object', properties: { metadata: { type: 'object', properties: { name: { type: 'string' } } }, ...properties } });

  it('turns const into a typed one-value enum', () => {
    expect(convert({ kind: { const: 'EditorServer' } }).properties.kind).toEqual({ type: 'string', enum: ['EditorServer'] });
  });

  it('declares a list of unique items a set, which the API server checks for duplicates', () => {
    expect(convert({ tags: { type: 'array', items: { type: 'string' }, uniqueItems: true } }).properties.tags)
      .toEqual({ type: 'array', items: { type: 'string' }, 'x-kubernetes-list-type': 'set' });
  });

  it('spells a \\u escape in a pattern as Go regular expressions do, leaving an escaped backslash alone', () => {
    expect(convert({ path: { type: 'string', pattern: '^[^\\u0000]*\\\\u$' } }).properties.path.pattern).toBe('^[^\\x{0000}]*\\\\u$');
  });

  it('refuses a keyword it does not know how to carry over, naming where it is', () => {
    expect(() => convert({ either: { oneOf: [{ type: 'string' }, { type: 'integer' }] } })).toThrow(/\/either: .*does not convert "oneOf"/);
  });

  it('refuses a node it cannot give a type', () => {
    expect(() => convert({ anything: { description: 'no type' } })).toThrow(/\/anything: a structural schema needs a type/);
  });
});
