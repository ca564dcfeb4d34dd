// The one polling helper of the tests: no other imports, so light fixtures can use it too.

/**
 * Polls `check` every `intervalMs` until it returns something other than undefined or false, and
 * resolves with that; a throw counts as not yet. After `timeoutMs` it rejects with the last
 * error thrown, if any. The deadline is on performance.now(), so it holds under a faked Date.
 */
export async function eventually<T>(check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 10_000, intervalMs = 50): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown;
  while (performance.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value as T;
    } catch (error) {
      lastError = error;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw lastError ?? new Error(`condition not met within ${timeoutMs} ms: ${check}`);
}
