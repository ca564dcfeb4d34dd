// How large a server's volume is asked for. Its claim is applied at every start (the whole object,
// server-side), and the API server refuses a smaller request than the claim has, and a larger one
// unless its StorageClass can expand volumes: so a claim that exists keeps its size, and only
// grows for devcontainer.json's hostRequirements.storage, where the cluster can grow it. A new
// claim asks for the configured size, or the requirement when that is more.
import { quantityValue } from '../../core/quantity.ts';

const MI = 2 ** 20;

export interface ClaimSize {
  /** The request to apply. */
  size: string;
  /** Set when the requirement could not be met: why, in words for the server's events. */
  short?: string;
}

/** `bytes` as a quantity, rounded up to a whole MiB (a size a person reads, and a volume driver takes). */
export function bytesQuantity(bytes: number): string {
  const mib = Math.ceil(bytes / MI);
  return mib % 1024 === 0 ? `${mib / 1024}Gi` : `${mib}Mi`;
}

/**
 * The claim's request: `existing` (what the claim asks for now, if it exists) is kept unless
 * `minBytes` is more and `canExpand()` (its StorageClass allows expansion, asked only then);
 * a claim to be made asks for the larger of `configured` and `minBytes`.
 */
export async function claimSize(configured: string, existing: string | undefined, minBytes: number | undefined, canExpand: () => Promise<boolean>): Promise<ClaimSize> {
  const has = existing === undefined ? undefined : quantityValue(existing);
  if (existing === undefined || has === undefined) {
    const size = minBytes !== undefined && minBytes > (quantityValue(configured) ?? 0) ? bytesQuantity(minBytes) : configured;
    return { size: existing ?? size };
  }
  if (minBytes === undefined || minBytes <= has) return { size: existing };
  const wanted = bytesQuantity(minBytes);
  if (await canExpand()) return { size: wanted };
  return { size: existing, short: `devcontainer.json's hostRequirements.storage asks for ${wanted}, and the server's volume, made with ${existing}, cannot be expanded (its StorageClass does not allow volume expansion): the editor runs on the volume it has` };
}
