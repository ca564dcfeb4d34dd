// ajv's errors in words, for every schema the service checks (manifests, config, request bodies).
import type { ErrorObject } from 'ajv';
import { QUANTITY_HINT } from './quantity.ts';

/** Turns ajv's errors into lines a person can act on: `spec.port: must be <= 65535`. */
export function describeErrors(errors: ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((e) => {
    const where = e.instancePath ? e.instancePath.slice(1).replaceAll('/', '.') : '(top level)';
    if (e.keyword === 'additionalProperties') {
      return `${where}: unknown field "${(e.params as { additionalProperty: string }).additionalProperty}"`;
    }
    if (e.keyword === 'enum') return `${where}: ${e.message} (${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')})`;
    if (e.keyword === 'const') return `${where}: must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}`;
    if (e.keyword === 'pattern' && where === 'metadata.name') return `${where}: must be a DNS-1123 label (lower-case letters, digits and "-", at most 63)`;
    if (e.keyword === 'pattern' && where === 'name') return 'name: must not be blank';
    // A Kubernetes quantity (resources, a volume's size): its grammar in words, not its pattern.
    if (e.schemaPath.includes('/quantity/')) return `${where}: ${QUANTITY_HINT}`;
    // A person (spec.access.sharedWith): who it must name, not the pattern.
    if (e.schemaPath.includes('/identity/') && e.keyword === 'pattern') {
      return `${where}: must be an email address or user id as the sign-on forwards it (letters, digits and . _ % + - ' @, no spaces), such as ada@example.com`;
    }
    return `${where}: ${e.message}`;
  });
}
