// Orderings without `localeCompare`: collation touches about 6 MB of ICU data pages, resident
// from then on, for names that are ASCII (memory at rest).

/** Code-unit order: what `sort()` does, as a comparator. */
export function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Case-insensitive order, then lower case before upper case: for ASCII names the order
 * `localeCompare(…, 'en')` gives, apart from punctuation, which sorts by code unit here.
 */
export function byText(a: string, b: string): number {
  const la = a.toLowerCase();
  const lb = b.toLowerCase();
  if (la !== lb) return la < lb ? -1 : 1;
  return a === b ? 0 : a < b ? 1 : -1;
}

/**
 * Version order: runs of digits compare as numbers, anything else by code unit, so
 * "1.10.0" comes after "1.9.0" (what `localeCompare` with `numeric: true` gave).
 */
export function byVersion(a: string, b: string): number {
  const pa = a.match(/\d+|\D+/g) ?? [];
  const pb = b.match(/\d+|\D+/g) ?? [];
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    const x = pa[i];
    const y = pb[i];
    if (x === y) continue;
    const digits = /^\d/.test(x) && /^\d/.test(y);
    if (digits) {
      const nx = BigInt(x);
      const ny = BigInt(y);
      if (nx !== ny) return nx < ny ? -1 : 1;
      continue;
    }
    return byCodeUnits(x, y);
  }
  return pa.length - pb.length;
}
