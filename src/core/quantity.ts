// Kubernetes quantities ("500m", "2", "1Gi", "1.5e9"), as a Pod's resources and a volume's size
// are written: checked and compared here so that the config and a manifest refuse what the
// cluster would refuse, with the field named, before anything reaches the cluster.

/** Kubernetes' own grammar, without the sign: an amount never is negative here. */
const QUANTITY = /^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?$/;

const SUFFIXES: Record<string, number> = {
  n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};

/** What a person is told when a value is not a quantity. */
export const QUANTITY_HINT = 'must be a Kubernetes quantity such as "500m" or "2" (CPU) or "512Mi", "1Gi" (memory), written as a string';

export function isQuantity(text: unknown): text is string {
  return typeof text === 'string' && text.length <= 64 && QUANTITY.test(text);
}

/** The amount a quantity stands for (cores, bytes), or undefined when it is not one. */
export function quantityValue(text: string): number | undefined {
  if (!isQuantity(text)) return undefined;
  const match = /^([0-9.]+)(?:([eE][+-]?[0-9]+)|([A-Za-z]*))$/.exec(text)!;
  const number = Number(match[1]);
  return match[2] !== undefined ? number * 10 ** Number(match[2].slice(1)) : number * SUFFIXES[match[3]];
}
