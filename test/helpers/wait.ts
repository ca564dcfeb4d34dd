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

/**
 * Resolves with the arguments of the first call, from now on, of a listener given to `subscribe`
 * that `matches` accepts (any call, without it), and removes the listener. `subscribe` adds the
 * listener and returns its removal (as StatsSampler.onSample does; for an EventEmitter,
 * `(l) => { e.on(name, l); return () => e.off(name, l); }`). After `timeoutMs` it rejects, naming
 * the calls it was waiting for. The event-driven twin of `eventually`: for "after the next X".
 */
export function nextCall<A extends unknown[]>(
  subscribe: (listener: (...args: A) => void) => () => void,
  matches: (...args: A) => boolean = () => true,
  timeoutMs = 10_000,
): Promise<A> {
  return new Promise<A>((resolve, reject) => {
    let done = false;
    let remove: (() => void) | undefined;
    const finish = () => {
      done = true;
      clearTimeout(timer);
      remove?.();
    };
    const timer = setTimeout(() => {
      finish();
      reject(new Error(`no call accepted by ${matches} within ${timeoutMs} ms`));
    }, timeoutMs);
    remove = subscribe((...args: A) => {
      if (done) return;
      let accepted: boolean;
      try {
        accepted = matches(...args);
      } catch (error) {
        finish();
        reject(error);
        return;
      }
      if (!accepted) return;
      finish();
      resolve(args);
    });
    // A listener called during subscribe itself resolved before `remove` was known.
    if (done) remove();
  });
}
