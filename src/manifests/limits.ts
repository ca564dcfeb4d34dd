// How much `spec.settings` may hold, the same for the API and for hand-written manifests. Every
// read of a manifest parses its YAML, and the YAML parser compares each key of a mapping with all
// keys before it: 20,000 settings keys cost 10 s per read. Bounded, a read costs milliseconds.

export const SETTINGS_LIMITS = {
  /** Serialized as JSON. VS Code's own settings of one user rarely pass 10 KiB. */
  maxBytes: 64 * 1024,
  /** Levels of nesting, the settings object itself being the first. */
  maxDepth: 16,
  /** Keys and array items, counted through every level. */
  maxEntries: 1000,
};

export interface JsonShape {
  /** Deepest nesting seen, counting the value itself as 1; stops counting past the limit. */
  depth: number;
  /** Keys and array items seen; stops counting past the limit. */
  entries: number;
}

/**
 * Measures a parsed JSON value's nesting and size without recursion (a deep value cannot
 * overflow the stack) and stops as soon as a limit is passed, so the cost stays bounded too.
 */
export function measureJson(value: unknown, limits: { maxDepth: number; maxEntries: number }): JsonShape {
  const shape: JsonShape = { depth: 0, entries: 0 };
  const pending: Array<[unknown, number]> = [[value, 1]];
  while (pending.length > 0) {
    const [item, depth] = pending.pop()!;
    if (item === null || typeof item !== 'object') continue;
    shape.depth = Math.max(shape.depth, depth);
    if (shape.depth > limits.maxDepth) return shape;
    for (const child of Object.values(item)) {
      if (++shape.entries > limits.maxEntries) return shape;
      pending.push([child, depth + 1]);
    }
  }
  return shape;
}

/** Why these settings pass SETTINGS_LIMITS ("is nested deeper than 16 levels: …"), each saying the limit; empty when they fit. */
export function settingsProblems(settings: unknown): string[] {
  const { maxBytes, maxDepth, maxEntries } = SETTINGS_LIMITS;
  const shape = measureJson(settings, SETTINGS_LIMITS);
  if (shape.depth > maxDepth) return [`is nested deeper than ${maxDepth} levels: flatten it (VS Code settings use dotted keys)`];
  if (shape.entries > maxEntries) return [`holds more than ${maxEntries} keys and array items: keep only the settings that differ from the defaults`];
  const bytes = Buffer.byteLength(JSON.stringify(settings) ?? '');
  if (bytes > maxBytes) {
    return [`is ${Math.ceil(bytes / 1024)} KiB as JSON, more than ${maxBytes / 1024} KiB: keep large values in files in the workspace`];
  }
  return [];
}
