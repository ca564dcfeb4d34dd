// Packages the service needs only for some requests are required on the first of them, not at
// start (memory at rest; test/service/lazy-modules.test.ts checks what start loads).
// require, not import(): it is synchronous, so a caller stays synchronous and the first request
// is handled in the same turn.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** A function returning the module `specifier` names, required on its first call and the same one after. */
export function requiredOnFirstUse<T>(specifier: string): () => T {
  let module: T | undefined;
  return () => (module ??= require(specifier) as T);
}
