// `npm run generate:crd`: writes deploy/kubernetes/crd.yaml, the EditorServer
// CustomResourceDefinition, from schemas/editorserver.schema.json, so the cluster checks a
// manifest with the same rules as the manifests folder. test/manifests/crd.test.ts regenerates
// it in memory and fails when the committed file has drifted.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';

type JsonSchema = { [keyword: string]: any };

export const SCHEMA_FILE = fileURLToPath(new URL('../schemas/editorserver.schema.json', import.meta.url));
export const CRD_FILE = fileURLToPath(new URL('../deploy/kubernetes/crd.yaml', import.meta.url));

const HEADER = `# Generated from schemas/editorserver.schema.json by \`npm run generate:crd\`
# (scripts/generate-crd.ts). Do not edit: change the schema and run it again.
`;

/** Keywords whose value is copied as it is: apiextensions v1 reads them as JSON Schema does. */
const COPIED = new Set([
  'type', 'description', 'enum', 'minimum', 'maximum', 'minLength', 'maxLength',
  'minItems', 'maxItems', 'minProperties', 'maxProperties', 'required', 'default',
]);
/** Keywords that only name or locate the JSON Schema document; a CRD has no place for them. */
const DROPPED = new Set(['$schema', '$id', 'title', 'definitions']);

/** The whole CustomResourceDefinition, as YAML text with its header. */
export function generateCrd(schema: JsonSchema): string {
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'editorservers.devbox.dev' },
    spec: {
      group: 'devbox.dev',
      names: { kind: 'EditorServer', listKind: 'EditorServerList', plural: 'editorservers', singular: 'editorserver', shortNames: ['eds'] },
      scope: 'Namespaced',
      versions: [{
        name: 'v1alpha1',
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: [
          { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
          { name: 'Port', type: 'integer', jsonPath: '.status.port' },
          { name: 'Owner', type: 'string', jsonPath: '.metadata.annotations.devbox\\.dev/owner' },
          { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
        ],
        schema: { openAPIV3Schema: structuralSchema(schema) },
      }],
    },
  };
  return HEADER + stringify(crd, { lineWidth: 0 });
}

/**
 * The JSON Schema as a structural schema (every node typed, $refs inlined) that apiextensions v1
 * accepts from Kubernetes 1.20 on. Throws on a keyword it does not know how to carry over, so a
 * new one in the schema is a decision here, not a CRD the API server refuses.
 */
export function structuralSchema(schema: JsonSchema): JsonSchema {
  const root = convert(schema, schema.definitions ?? {}, '');
  // Kubernetes owns metadata: a CRD may restrict only name and generateName. The name's rule is
  // kept: Kubernetes alone would take any DNS subdomain (dots, up to 253 characters), which the
  // manifests folder and the runtime's object names refuse.
  root.properties.metadata = { type: 'object', properties: { name: root.properties.metadata.properties.name } };
  return root;
}

function convert(node: JsonSchema, definitions: Record<string, JsonSchema>, path: string): JsonSchema {
  if (node.$ref) {
    const name = /^#\/definitions\/(.+)$/.exec(node.$ref)?.[1];
    if (!name || !definitions[name]) throw new Error(`${path || '/'}: cannot resolve $ref ${node.$ref}`);
    // Draft-07 ignores a $ref's siblings, but this schema uses them to give a reference its own
    // description: inline the definition, then let the siblings win.
    const { $ref, ...siblings } = node;
    return convert({ ...definitions[name], ...siblings }, definitions, path);
  }
  const out: JsonSchema = {};
  for (const [keyword, value] of Object.entries(node)) {
    if (COPIED.has(keyword)) out[keyword] = value;
    else if (DROPPED.has(keyword)) continue;
    else if (keyword === 'const') out.enum = [value];   // apiextensions v1 has no const
    else if (keyword === 'pattern') out.pattern = re2Pattern(value);
    else if (keyword === 'items') out.items = convert(value, definitions, `${path}/items`);
    else if (keyword === 'properties') {
      out.properties = Object.fromEntries(Object.entries(value as Record<string, JsonSchema>)
        .map(([name, child]) => [name, convert(child, definitions, `${path}/${name}`)]));
    } else if (keyword === 'additionalProperties') {
      // false beside properties is forbidden in a structural schema; unknown fields are pruned
      // (1.20) or refused by field validation (kubectl's, and the API server's from 1.25) instead.
      // A schema makes the object a map (labels, annotations).
      if (value === false && node.properties) continue;
      if (typeof value !== 'object') throw new Error(`${path || '/'}: additionalProperties: ${value} without properties has no structural form`);
      out.additionalProperties = convert(value, definitions, `${path}/*`);
    } else if (keyword === 'uniqueItems') {
      // v1 refuses uniqueItems (quadratic to check); a list of scalars declared a set is checked
      // for duplicates by the API server instead.
      if (value === true) out['x-kubernetes-list-type'] = 'set';
    } else {
      throw new Error(`${path || '/'}: scripts/generate-crd.ts does not convert "${keyword}" yet: decide how apiextensions v1 should carry it (structural schemas allow no types inside oneOf/anyOf/allOf/not, and no nullable without a type)`);
    }
  }
  // Every node of a structural schema has a type; `const` and `enum` imply it here.
  if (!out.type && out.enum) out.type = typeOfValues(out.enum, path);
  if (!out.type) throw new Error(`${path || '/'}: a structural schema needs a type here`);
  // An object that declares neither properties nor a map is free-form (spec.settings, status):
  // without this the API server would prune every field in it.
  if (out.type === 'object' && !out.properties && !out.additionalProperties) out['x-kubernetes-preserve-unknown-fields'] = true;
  const { type, ...rest } = out;
  return { type, ...rest };   // the type first: it reads better in the YAML
}

function typeOfValues(values: unknown[], path: string): string {
  const types = new Set(values.map((v) => (Number.isInteger(v) ? 'integer' : typeof v)));
  const [type] = types;
  if (types.size !== 1 || !['string', 'integer', 'number', 'boolean'].includes(type!)) {
    throw new Error(`${path || '/'}: cannot give one type to the values ${JSON.stringify(values)}`);
  }
  return type!;
}

/**
 * The API server checks patterns with Go's RE2, which spells a code point \x{hhhh}, not \uhhhh
 * as JavaScript (and ajv) do. The schema's other syntax is common to both.
 */
function re2Pattern(pattern: string): string {
  // An escaped backslash (\\) is matched first, so the u after it stays a plain u.
  return pattern.replace(/\\\\|\\u([0-9a-fA-F]{4})/g, (escape, hex) => (hex ? `\\x{${hex}}` : escape));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = generateCrd(JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')));
  mkdirSync(dirname(CRD_FILE), { recursive: true });
  writeFileSync(CRD_FILE, text);
  console.log(`wrote ${CRD_FILE}`);
}
