// spec.resources: Kubernetes' shape, checked as the cluster would check it, and laid over the
// config's defaults so that what an editor starts with is always accepted.
import { describe, expect, it } from 'vitest';
import { parseManifest } from '../../src/manifests/parse.ts';
import { effectiveResources } from '../../src/manifests/resources.ts';

function manifestWith(resources: string): string {
  return [
    'apiVersion: devbox.dev/v1alpha1',
    'kind: EditorServer',
    'metadata: { name: big }',
    'spec:',
    '  running: true',
    `  resources: ${resources}`,
  ].join('\n');
}

const DEFAULTS = { requests: { cpu: '500m', memory: '1Gi' }, limits: { memory: '2Gi' } };

describe('spec.resources in a manifest', () => {
  it('is read in Kubernetes\' own shape', () => {
    const read = parseManifest('big', manifestWith('{ requests: { cpu: "1", memory: 2Gi }, limits: { cpu: 1500m, memory: 4Gi } }'));
    expect(read.kind).toBe('ok');
    if (read.kind === 'ok') expect(read.server.spec.resources).toEqual({ requests: { cpu: '1', memory: '2Gi' }, limits: { cpu: '1500m', memory: '4Gi' } });
  });

  it.each([
    ['{ limits: { memory: 4 GB } }', 'big.yaml:6:34: spec.resources.limits.memory: must be a Kubernetes quantity such as "500m" or "2" (CPU) or "512Mi", "1Gi" (memory), written as a string'],
    ['{ requests: { cpu: 2 } }', 'big.yaml:6:33: spec.resources.requests.cpu: must be a Kubernetes quantity such as "500m" or "2" (CPU) or "512Mi", "1Gi" (memory), written as a string'],
    ['{ requests: { cpu: "-1" } }', 'big.yaml:6:33: spec.resources.requests.cpu: must be a Kubernetes quantity such as "500m" or "2" (CPU) or "512Mi", "1Gi" (memory), written as a string'],
    ['{ limits: { gpu: "1" } }', 'big.yaml:6:26: spec.resources.limits: unknown field "gpu"'],
    ['{ requests: { memory: 3Gi }, limits: { memory: 2Gi } }', 'big.yaml:6:36: spec.resources.requests.memory: "3Gi" is more than limits.memory ("2Gi"): a request may not exceed its limit; lower the request or raise the limit'],
  ])('refuses %s, naming the field', (resources, problem) => {
    const read = parseManifest('big', manifestWith(resources));
    expect(read.kind).toBe('invalid');
    if (read.kind === 'invalid') expect(read.errors).toEqual([problem]);
  });
});

describe('the resources an editor starts with', () => {
  it('are the config\'s defaults when the manifest gives none, and nothing when neither does', () => {
    expect(effectiveResources(DEFAULTS, undefined)).toEqual(DEFAULTS);
    expect(effectiveResources({}, undefined)).toBeUndefined();
    expect(effectiveResources(undefined, {})).toBeUndefined();
  });

  it('take each value the manifest gives over the default, value by value', () => {
    expect(effectiveResources(DEFAULTS, { requests: { cpu: '2' }, limits: { cpu: '4' } })).toEqual({
      requests: { cpu: '2', memory: '1Gi' },
      limits: { cpu: '4', memory: '2Gi' },
    });
  });

  it('move a default that would contradict the manifest to meet it, so the cluster accepts them', () => {
    // More memory asked for than the default limit: the limit follows.
    expect(effectiveResources(DEFAULTS, { requests: { memory: '3Gi' } })).toEqual({ requests: { cpu: '500m', memory: '3Gi' }, limits: { memory: '3Gi' } });
    // A limit below the default request: the request follows.
    expect(effectiveResources(DEFAULTS, { limits: { memory: '512Mi' } })).toEqual({ requests: { cpu: '500m', memory: '512Mi' }, limits: { memory: '512Mi' } });
    // Quantities are compared as amounts, not as text.
    expect(effectiveResources(DEFAULTS, { requests: { memory: '2048Mi' } })).toEqual({ requests: { cpu: '500m', memory: '2048Mi' }, limits: { memory: '2Gi' } });
  });
});
