// Which paths a snapshot leaves out: gitignore patterns (DEFAULT_EXCLUDES first, then the
// caller's; later ones win, `!` re-includes), matched case-sensitively like git on Linux,
// against paths relative to a root. Matching is git's own, through the `ignore` package.
import ignore from 'ignore';
import { DEFAULT_EXCLUDES } from './types.ts';

export interface ExcludeMatcher {
  /** `rel`: the path below the root, `/`-separated, without a trailing slash. */
  excludes(rel: string, isDir: boolean): boolean;
}

// The last matcher made, for the next snapshot with the same patterns (making one costs about a millisecond).
let last: { key: string; matcher: ExcludeMatcher } | undefined;

export function excludeMatcher(patterns: readonly string[]): ExcludeMatcher {
  const key = JSON.stringify(patterns);
  if (last?.key === key) return last.matcher;
  const matcher = ignore({ ignorecase: false }).add([...DEFAULT_EXCLUDES, ...patterns]);
  const made: ExcludeMatcher = {
    excludes(rel, isDir) {
      try {
        return matcher.ignores(isDir ? `${rel}/` : rel);
      } catch {
        // The package refuses names it takes for relative paths (`...`): no pattern of ours names them.
        return false;
      }
    },
  };
  last = { key, matcher: made };
  return made;
}
