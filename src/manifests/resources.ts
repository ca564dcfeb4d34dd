// CPU and memory for an editor, in Kubernetes' own shape: a manifest's spec.resources over the
// config's defaults (runtime.kubernetes.resources). A runtime that can enforce them (a Pod's
// requests and limits) does; the process runtime ignores them.
import { isQuantity, quantityValue } from '../core/quantity.ts';

export type ResourceName = 'cpu' | 'memory';

/** `{requests, limits}`, each `{cpu, memory}` as quantity strings ("500m", "1Gi"). */
export interface Resources {
  requests?: Partial<Record<ResourceName, string>>;
  limits?: Partial<Record<ResourceName, string>>;
}

const NAMES: readonly ResourceName[] = ['cpu', 'memory'];

/**
 * What JSON Schema cannot say about resources whose values are quantities already: a request
 * above its limit, which the cluster would refuse. Each as [path under `resources`, message].
 */
export function resourceProblems(resources: Resources): Array<[string[], string]> {
  return NAMES.flatMap((name): Array<[string[], string]> => {
    const request = resources.requests?.[name];
    const limit = resources.limits?.[name];
    if (!isQuantity(request) || !isQuantity(limit) || quantityValue(request)! <= quantityValue(limit)!) return [];
    return [[['requests', name], `"${request}" is more than limits.${name} ("${limit}"): a request may not exceed its limit; lower the request or raise the limit`]];
  });
}

/**
 * The resources an editor is started with: each value the manifest gives, else the default.
 * A default that would contradict a value the manifest gives moves to meet it (a manifest asking
 * for 4Gi of memory gets a limit of 4Gi where the default limit is lower), so the result is
 * always one the cluster accepts. Undefined when neither gives anything.
 */
export function effectiveResources(defaults: Resources | undefined, given: Resources | undefined): Resources | undefined {
  const requests: Partial<Record<ResourceName, string>> = {};
  const limits: Partial<Record<ResourceName, string>> = {};
  for (const name of NAMES) {
    let request = given?.requests?.[name] ?? defaults?.requests?.[name];
    let limit = given?.limits?.[name] ?? defaults?.limits?.[name];
    if (request !== undefined && limit !== undefined && (quantityValue(request) ?? 0) > (quantityValue(limit) ?? Infinity)) {
      if (given?.limits?.[name] === undefined) limit = request;
      else request = limit;
    }
    if (request !== undefined) requests[name] = request;
    if (limit !== undefined) limits[name] = limit;
  }
  const result: Resources = {
    ...(Object.keys(requests).length > 0 ? { requests } : {}),
    ...(Object.keys(limits).length > 0 ? { limits } : {}),
  };
  return Object.keys(result).length > 0 ? result : undefined;
}
