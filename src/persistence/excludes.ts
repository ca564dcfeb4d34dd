// Which paths a snapshot leaves out: gitignore patterns (DEFAULT_EXCLUDES first, then the
// caller's; later ones win, `!` re-includes), matched case-sensitively like git on Linux,
// against paths relative to a root. Matching is git's own, through the `ignore` package.
import ignore from 'ignore';
import { DEFAULT_EXCLUDES } from './types.ts';

export interface ExcludeMatcher {
  /** `rel`: the path below the root, `/`-separated, without a trailing slash. */
  excludes(rel: string, isDir: boolean): boolean;
}

export function excludeMatcher(patterns: readonly string[]): ExcludeMatcher {
  const matcher = ignore({ ignorecase: false }).add([...DEFAULT_EXCLUDES, ...patterns]);
  return {
    excludes(rel, isDir) {
      try {
        return matcher.ignores(isDir ? `${rel}/` : rel);
      } catch {
        // The package refuses names it takes for relative paths (`...`): no pattern of ours names them.
        return false;
      }
    },
  };
}
