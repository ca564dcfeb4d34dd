// Kubernetes quantities: what the cluster accepts for CPU, memory and a volume's size, and the amount each stands for.
import { describe, expect, it } from 'vitest';
import { isQuantity, quantityValue } from '../../src/core/quantity.ts';
import { readProjectJson } from '../../src/core/project.ts';

describe('a Kubernetes quantity', () => {
  it.each([
    ['500m', 0.5], ['2', 2], ['0.5', 0.5], ['.5', 0.5], ['1.', 1], ['1Gi', 2 ** 30], ['512Mi', 512 * 2 ** 20],
    ['1G', 1e9], ['1k', 1000], ['1Ki', 1024], ['1e9', 1e9], ['1E3', 1000], ['100n', 100e-9], ['0', 0],
  ])('reads %s as %d', (text, value) => {
    expect(isQuantity(text)).toBe(true);
    expect(quantityValue(text)).toBeCloseTo(value, 12);
  });

  it.each(['', '1 Gi', '1GB', '1gi', '-1', '+1', 'Gi', '1.5.5', '1e', 'ten', '0x10', '1Gi ', `${'9'.repeat(65)}`])('refuses %j', (text) => {
    expect(isQuantity(text)).toBe(false);
    expect(quantityValue(text)).toBeUndefined();
  });

  it('is refused by the config schema and the manifest schema exactly as here', () => {
    const patterns = [
      readProjectJson('schemas/config.schema.json').definitions.quantity.pattern,
      readProjectJson('schemas/editorserver.schema.json').definitions.quantity.pattern,
    ].map((source: string) => new RegExp(source, 'u'));
    for (const text of ['500m', '1Gi', '1e9', '.5', '1 Gi', '1GB', '-1', 'Gi']) {
      for (const pattern of patterns) expect(pattern.test(text), text).toBe(isQuantity(text));
    }
  });
});
