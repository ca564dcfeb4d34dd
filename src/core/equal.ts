// One equality for the project's data (manifests, status, settings, configuration): values equal
// as JSON would hold them. Key order does not matter and a member set to undefined is as if
// absent (JSON.stringify drops it), so a status rebuilt with `reason: undefined` equals the one
// read from disk; arrays are compared in order. Comparing JSON.stringify output instead would
// call two objects different for their key order; isDeepStrictEqual, for an undefined member.
export function sameData(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((value, i) => sameData(value ?? null, b[i] ?? null));
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left).filter((key) => left[key] !== undefined);
  if (keys.length !== Object.keys(right).filter((key) => right[key] !== undefined).length) return false;
  return keys.every((key) => Object.hasOwn(right, key) && sameData(left[key], right[key]));
}
